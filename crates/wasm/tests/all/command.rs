//! WASI preview 1 commands, written in WAT so that each test states what
//! the guest does: standard input, output and error, environment and
//! arguments, exit status, preemption, and the bounds on what a command
//! may write or call.

use bytes::Bytes;
use faasched_wasm::{
    Deployment, Fault, Input, Kind, Output, Result, Runtime, STDERR_KEPT, Sandbox, Step,
};

use crate::{finish, runtime};

const WASI: &str = "wasi_snapshot_preview1";

/// A command importing `imports` (WAT import lines) with one page of
/// memory and `body` as `_start`'s body.
fn command(imports: &str, body: &str) -> String {
    format!(
        r#"(module
             {imports}
             (memory (export "memory") 2)
             (func (export "_start") (local $i i32) (local $n i32) {body}))"#
    )
}

const FD_WRITE: &str = r#"(import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))"#;
const FD_READ: &str = r#"(import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param i32 i32 i32 i32) (result i32)))"#;
const PROC_EXIT: &str =
    r#"(import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))"#;

/// Writes `len` bytes at `ptr` to `fd` through an iovec at 0, the count at
/// 8, dropping the errno.
fn write(fd: u32, ptr: &str, len: &str) -> String {
    format!(
        "(i32.store (i32.const 0) {ptr}) (i32.store (i32.const 4) {len})
         (drop (call $fd_write (i32.const {fd}) (i32.const 0) (i32.const 1) (i32.const 8)))"
    )
}

/// A command that writes "hello\n" to standard output.
fn hello() -> String {
    let imports = format!(r#"{FD_WRITE} (data (i32.const 64) "hello\n")"#);
    command(&imports, &write(1, "(i32.const 64)", "(i32.const 6)"))
}

/// A command that copies standard input to standard output, 64 KiB at a
/// time.
fn echo() -> String {
    let body = format!(
        "(loop $more
           (i32.store (i32.const 16) (i32.const 1024))
           (i32.store (i32.const 20) (i32.const 65536))
           (if (call $fd_read (i32.const 0) (i32.const 16) (i32.const 1) (i32.const 24))
             (then unreachable))
           (local.set $n (i32.load (i32.const 24)))
           (if (local.get $n) (then {} (br $more))))",
        write(1, "(i32.const 1024)", "(local.get $n)")
    );
    command(&format!("{FD_READ} {FD_WRITE}"), &body)
}

/// A command that prints its arguments (`which` = "args") or environment
/// (`which` = "environ"), one per line.
fn strings(which: &str) -> String {
    let imports = format!(
        r#"(import "{WASI}" "{which}_sizes_get" (func $sizes (param i32 i32) (result i32)))
           (import "{WASI}" "{which}_get" (func $get (param i32 i32) (result i32)))
           {FD_WRITE}"#
    );
    let body = format!(
        "(drop (call $sizes (i32.const 32) (i32.const 36)))
         (drop (call $get (i32.const 1024) (i32.const 4096)))
         (local.set $n (i32.load (i32.const 36)))
         (block $done (loop $each
           (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
           (if (i32.eqz (i32.load8_u (i32.add (i32.const 4096) (local.get $i))))
             (then (i32.store8 (i32.add (i32.const 4096) (local.get $i)) (i32.const 10))))
           (local.set $i (i32.add (local.get $i) (i32.const 1)))
           (br $each)))
         {}",
        write(1, "(i32.const 4096)", "(local.get $n)")
    );
    command(&imports, &body)
}

/// A command that writes `count` blocks of 1 KiB to `fd`, ignoring errors.
fn writes(fd: u32, count: u32) -> String {
    let body = format!(
        "(loop $each
           {}
           (local.set $i (i32.add (local.get $i) (i32.const 1)))
           (br_if $each (i32.lt_u (local.get $i) (i32.const {count}))))",
        write(fd, "(i32.const 1024)", "(i32.const 1024)")
    );
    command(FD_WRITE, &body)
}

/// A command that counts to `steps`, then writes "done".
fn count(steps: u32) -> String {
    let imports = format!(r#"{FD_WRITE} (data (i32.const 64) "done")"#);
    let body = format!(
        "(loop $each
           (local.set $i (i32.add (local.get $i) (i32.const 1)))
           (br_if $each (i32.lt_u (local.get $i) (i32.const {steps}))))
         {}",
        write(1, "(i32.const 64)", "(i32.const 4)")
    );
    command(&imports, &body)
}

/// A runtime with `modules` registered.
fn with(modules: &[(&str, String)]) -> Result<Runtime> {
    let mut runtime = runtime(|c| {
        c.max_output(10 << 10);
    })?;
    for (name, wat) in modules {
        runtime.register(name, wat.as_bytes())?;
    }
    Ok(runtime)
}

/// `function` run to its end on `stdin` and `env`.
fn call(runtime: &Runtime, function: &str, stdin: &[u8], env: &[(&str, &str)]) -> Result<Output> {
    let input = Input::Command {
        stdin: Bytes::copy_from_slice(stdin),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    finish(&mut Sandbox::start(
        runtime,
        &runtime.preempt(),
        function,
        input,
    )?)
}

#[test]
fn a_command_writes_its_answer_to_standard_output() -> Result<()> {
    let runtime = with(&[("hello", hello())])?;
    let out = call(&runtime, "hello", b"", &[])?;
    assert_eq!(
        (out.value, &out.stdout[..], &out.stderr[..]),
        (0, &b"hello\n"[..], &b""[..])
    );
    assert_eq!(runtime.call("hello?a=1&b")?.kind, Kind::Command);
    assert_eq!(runtime.call("fib?n=3")?.kind, Kind::Run);
    Ok(())
}

#[test]
fn standard_input_comes_back_whole() -> Result<()> {
    let runtime = with(&[("echo", echo())])?;
    let body: Vec<u8> = (0..9_000u32).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(&call(&runtime, "echo", &body, &[])?.stdout[..], &body[..]);
    assert!(call(&runtime, "echo", b"", &[])?.stdout.is_empty());
    Ok(())
}

#[test]
fn a_command_sees_its_environment_and_its_name_as_argument() -> Result<()> {
    let runtime = with(&[("env", strings("environ")), ("args", strings("args"))])?;
    let env = [("REQUEST_METHOD", "POST"), ("QUERY_STRING", "n=3&x")];
    let out = call(&runtime, "env", b"", &env)?;
    assert_eq!(
        &out.stdout[..],
        b"REQUEST_METHOD=POST\nQUERY_STRING=n=3&x\n"
    );
    assert_eq!(&call(&runtime, "args", b"", &env)?.stdout[..], b"args\n");
    Ok(())
}

#[test]
fn the_exit_status_is_the_value() -> Result<()> {
    let exit = |status: i32| {
        let body = format!("(call $proc_exit (i32.const {status}))");
        command(PROC_EXIT, &body)
    };
    let runtime = with(&[("three", exit(3)), ("zero", exit(0))])?;
    assert_eq!(call(&runtime, "three", b"", &[])?.value, 3);
    assert_eq!(call(&runtime, "zero", b"", &[])?.value, 0);
    Ok(())
}

#[test]
fn a_command_writing_past_the_output_limit_has_no_answer() -> Result<()> {
    let runtime = with(&[("ten", writes(1, 10)), ("eleven", writes(1, 11))])?;
    assert_eq!(call(&runtime, "ten", b"", &[])?.stdout.len(), 10 << 10);
    assert_eq!(
        call(&runtime, "eleven", b"", &[]),
        Err(Fault::OutputLimit {
            function: "eleven".into(),
            limit: 10 << 10
        })
    );
    Ok(())
}

#[test]
fn standard_error_keeps_its_first_bytes_and_the_request_goes_on() -> Result<()> {
    let blocks = u32::try_from(STDERR_KEPT / 1024).unwrap() + 8;
    let runtime = with(&[("chatty", writes(2, blocks))])?;
    let out = call(&runtime, "chatty", b"", &[])?;
    assert_eq!(
        (out.value, out.stdout.len(), out.stderr.len()),
        (0, 0, STDERR_KEPT)
    );
    Ok(())
}

#[test]
fn a_command_yields_to_a_preemption_and_finishes_right() -> Result<()> {
    let runtime = with(&[("count", count(200_000_000)), ("hello", hello())])?;
    let preempt = runtime.preempt();
    let input = || Input::Command {
        stdin: Bytes::new(),
        env: Vec::new(),
    };
    let mut long = Sandbox::start(&runtime, &preempt, "count", input())?;
    preempt.request();
    assert_eq!(long.resume(), Step::Preempted);
    let mut short = Sandbox::start(&runtime, &preempt, "hello", input())?;
    assert_eq!(&finish(&mut short)?.stdout[..], b"hello\n");
    let out = finish(&mut long)?;
    assert_eq!((&out.stdout[..], out.stats.preemptions), (&b"done"[..], 1));
    Ok(())
}

#[test]
fn an_endless_command_is_stopped_by_the_cpu_limit() -> Result<()> {
    let mut runtime = runtime(|c| {
        c.cpu_limit(20_000_000);
    })?;
    runtime.register("forever", command("", "(loop $l (br $l))").as_bytes())?;
    assert_eq!(
        call(&runtime, "forever", b"", &[]),
        Err(Fault::Timeout {
            function: "forever".into(),
            limit: 20_000_000
        })
    );
    Ok(())
}

/// `poll_oneoff` (sleeping, or waiting on input) answers ENOTSUP (58): a
/// sandbox cannot wait without stopping its worker.
#[test]
fn waiting_is_refused() -> Result<()> {
    let imports = format!(
        r#"(import "{WASI}" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
           {PROC_EXIT}"#
    );
    let body = "(call $proc_exit
                  (call $poll (i32.const 0) (i32.const 512) (i32.const 1) (i32.const 1024)))";
    let runtime = with(&[("sleep", command(&imports, body))])?;
    assert_eq!(call(&runtime, "sleep", b"", &[])?.value, 58);
    Ok(())
}

#[test]
fn inputs_of_the_other_kind_are_refused() -> Result<()> {
    let runtime = with(&[("hello", hello())])?;
    let preempt = runtime.preempt();
    let refused = |r: Result<Sandbox>| matches!(r, Err(Fault::BadArgument { .. }));
    assert!(refused(Sandbox::start(&runtime, &preempt, "hello", 3)));
    let input = Input::Command {
        stdin: Bytes::new(),
        env: Vec::new(),
    };
    assert!(refused(Sandbox::start(&runtime, &preempt, "fib", input)));
    Ok(())
}

#[test]
fn modules_of_neither_abi_are_refused_saying_why() -> Result<()> {
    let mut runtime = runtime(|_| ())?;
    let cases = [
        (
            "host-import",
            command(r#"(import "env" "f" (func))"#, ""),
            "a WASI command may import only `wasi_snapshot_preview1`",
        ),
        (
            "unknown-wasi",
            command(&format!(r#"(import "{WASI}" "nope" (func))"#), ""),
            "nope",
        ),
        (
            "start-type",
            r#"(module (func (export "_start") (param i32)))"#.into(),
            "`_start` is not a function of type () -> ()",
        ),
        (
            "run-and-wasi",
            format!(
                r#"(module {PROC_EXIT}
                     (func (export "run") (param i64) (result i64) local.get 0))"#
            ),
            "a module exporting `run` may import nothing",
        ),
        (
            "neither",
            r#"(module (func (export "main")))"#.into(),
            "exports neither",
        ),
    ];
    for (name, wat, says) in cases {
        match runtime.register(name, wat.as_bytes()) {
            Err(Fault::Malformed { reason, .. }) => {
                assert!(reason.contains(says), "{name}: {reason}")
            }
            Err(other) => panic!("{name}: {other}"),
            Ok(_) => panic!("{name}: accepted"),
        }
    }
    Ok(())
}

/// A function deployed with its own environment and CPU limit sees the
/// one after its input's and is held to the other, and so is its image;
/// settings past the runtime's, or an environment for a `run` module, are
/// refused.
#[test]
fn a_deployment_sets_a_functions_environment_and_limits() -> Result<()> {
    let mut runtime = with(&[])?;
    let env = vec![
        ("MODE".to_owned(), "fast".to_owned()),
        ("A".into(), "1".into()),
    ];
    let deploy = |env: Vec<(String, String)>, cpu| Deployment {
        cpu_limit: cpu,
        env,
        ..Deployment::default()
    };
    let compiler = runtime.compiler();
    runtime.add(compiler.prepare_with(
        "env",
        strings("environ").as_bytes(),
        deploy(env.clone(), None),
    )?)?;
    runtime.add(compiler.prepare_with(
        "loop",
        count(u32::MAX).as_bytes(),
        deploy(Vec::new(), Some(20_000_000)),
    )?)?;
    let out = call(&runtime, "env", b"", &[("QUERY_STRING", "q")])?;
    assert_eq!(&out.stdout[..], b"QUERY_STRING=q\nMODE=fast\nA=1\n");
    let image = runtime.image("env")?;
    let preempt = runtime.preempt();
    let input = Input::Command {
        stdin: Bytes::new(),
        env: Vec::new(),
    };
    let mut sandbox = Sandbox::start_image(&runtime, &preempt, &image, input)?;
    assert_eq!(&finish(&mut sandbox)?.stdout[..], b"MODE=fast\nA=1\n");
    assert!(matches!(
        call(&runtime, "loop", b"", &[]),
        Err(Fault::Timeout {
            limit: 20_000_000,
            ..
        })
    ));

    let refused = |name: &str, wat: &str, deployment: Deployment| match compiler.prepare_with(
        name,
        wat.as_bytes(),
        deployment,
    ) {
        Err(Fault::Deployment { reason, .. }) => reason,
        Err(other) => panic!("{name}: {other}"),
        Ok(_) => panic!("{name}: accepted"),
    };
    let over = runtime.cpu_limit() + 1;
    assert!(refused("a", &hello(), deploy(Vec::new(), Some(over))).contains("CPU limit"));
    let memory = |bytes| Deployment {
        memory_limit: Some(bytes),
        ..Deployment::default()
    };
    let big = runtime.memory_limit() + (64 << 10);
    assert!(refused("b", &hello(), memory(big)).contains("memory limit"));
    assert!(refused("c", &hello(), memory(1000)).contains("multiple of 65536"));
    let bad_env = deploy(vec![("A=B".into(), "x".into())], None);
    assert!(refused("d", &hello(), bad_env).contains("`A=B`"));
    let run = r#"(module (func (export "run") (param i64) (result i64) local.get 0))"#;
    assert!(refused("e", run, deploy(env, None)).contains("reads no environment"));
    let outbound = |hosts: &[&str]| Deployment {
        allow_outbound: hosts.iter().map(|h| h.to_string()).collect(),
        ..Deployment::default()
    };
    assert!(
        refused("f", &hello(), outbound(&["example.com"]))
            .contains("only a wasi:http component makes outgoing requests")
    );
    for bad in ["http://example.com", "a@example.com", "example.com/x", ""] {
        let why = refused("g", &hello(), outbound(&[bad]));
        assert!(why.contains("is not `host` or `host:port`"), "{bad}: {why}");
    }
    Ok(())
}
