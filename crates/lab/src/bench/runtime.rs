//! `bench runtime`: the live node runtime's own costs on this machine: a
//! hot no-op through the dispatcher to a worker and back (in process, and
//! over HTTP on loopback), one worker's no-op throughput, and what
//! preempting a running sandbox adds to an urgent request; and what a
//! fresh sandbox from the pool costs.
//!
//! Every measurement runs `sledgescale` on one dispatcher and one worker,
//! pinned to the first two CPUs where the machine has more than two (the
//! measuring thread keeps the rest); with sleeping workers (the default) and
//! with polling ones.

use super::{BUILD, release_only};
use crate::node::live::{Host, LiveNode};
use crate::outln;
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use faasched_live::node::bench::{preemptions, round_trips, throughput};
use faasched_live::node::ingress::Ingress;
use faasched_live::node::invoke::Invoke;
use faasched_live::node::runtime::{Executor, Percentiles, Runtime};
use faasched_live::node::wasm::WasmExecutor;
use faasched_model::{MS, Nanos, SEC};
use faasched_policy::node::PreemptTest;
use faasched_wasm::{Sandbox, Step};
use faasched_workload::node::{Deadline, Deadlines};
use serde::Serialize;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the long request of a preemption round runs alone, µs of spin.
pub const LONG_US: u64 = 20_000;

/// What a bench of the runtime does.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Settings {
    /// Sequential round trips per latency measurement (after as many
    /// again, a tenth, to warm up).
    pub round_trips: u64,
    /// Requests of the throughput measurement.
    pub requests: u64,
    /// Requests kept in flight by it.
    pub window: u64,
    /// Preemption rounds.
    pub preemptions: u64,
}

/// Percentiles of a latency, µs.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Latency {
    /// Samples.
    pub count: usize,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl Latency {
    fn of_percentiles(p: Percentiles) -> Latency {
        let us = |v: u64| {
            if p.count == 0 {
                f64::NAN
            } else {
                v as f64 / 1e3
            }
        };
        Latency {
            count: p.count as usize,
            p50_us: us(p.p50),
            p99_us: us(p.p99),
            max_us: us(p.max),
        }
    }

    pub(crate) fn of(mut ns: Vec<Nanos>) -> Latency {
        ns.sort_unstable();
        let at = |q: f64| {
            let i = ((ns.len() as f64 * q).ceil() as usize).clamp(1, ns.len().max(1)) - 1;
            ns.get(i).map_or(f64::NAN, |&v| v as f64 / 1e3)
        };
        Latency {
            count: ns.len(),
            p50_us: at(0.5),
            p99_us: at(0.99),
            max_us: ns.last().map_or(f64::NAN, |&v| v as f64 / 1e3),
        }
    }
}

/// Its percentiles, aligned as the benches' tables show them.
impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "p50 {:>7.1} us  p99 {:>8.1} us  max {:>9.1} us",
            self.p50_us, self.p99_us, self.max_us
        )
    }
}

impl Latency {
    /// As shown, with its count of samples.
    fn counted(&self) -> String {
        format!("{self}  ({} samples)", self.count)
    }
}

/// What one worker mode measured.
#[derive(Clone, Debug, Serialize)]
pub struct Mode {
    /// `sleeping` or `polling` idle threads.
    pub mode: &'static str,
    /// A no-op's round trip in process.
    pub noop: Latency,
    /// The given WASI command's round trip in process, sent its query and
    /// body, if one was given.
    pub command: Option<Latency>,
    /// A no-op's round trip over HTTP/1.1 on loopback, one kept-alive
    /// connection.
    pub noop_http: Latency,
    /// No-ops answered per second, `window` in flight.
    pub noop_per_s: f64,
    /// An urgent no-op's round trip while a long spin runs on the worker
    /// (preempted for it).
    pub preempting_noop: Latency,
    /// Within it, from the dispatcher asking the worker to switch to the
    /// worker starting the urgent request (the flag, the epoch, the spin's
    /// check, its yield and requeue).
    pub switch: Latency,
}

/// Everything measured, as `--json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    /// What it did.
    pub settings: Settings,
    /// CPUs the dispatcher and worker were pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// A fresh `noop` sandbox from the pool (a store, a slot, the
    /// instantiation), on the measuring thread, `round_trips` times.
    pub sandbox_setup: Latency,
    /// Sleeping, then polling.
    pub modes: Vec<Mode>,
}

/// A no-op due `deadline` after it is sent.
pub(crate) fn noop(deadline: Nanos) -> Invoke {
    Invoke {
        function: "noop".into(),
        query: None,
        headers: Default::default(),
        body: Default::default(),
        label: None,
        deadline: Some(deadline),
        received: Instant::now(),
        cancel: Default::default(),
    }
}

/// The spin of [`LONG_US`] an urgent no-op preempts, due in 10 s.
pub(crate) fn long() -> Invoke {
    Invoke {
        function: "spin".into(),
        query: Some(format!("us={LONG_US}")),
        headers: Default::default(),
        body: Default::default(),
        label: None,
        deadline: Some(10 * SEC),
        received: Instant::now(),
        cancel: Default::default(),
    }
}

/// The node every measurement runs: `sledgescale` on one dispatcher and
/// one worker, idle threads polling or not, pinned to `cpus`.
pub(crate) fn node(poll: bool, cpus: Vec<usize>) -> LiveNode {
    LiveNode {
        policy: "sledgescale".into(),
        dispatchers: 1,
        workers: 1,
        workload: None,
        deadlines: Deadlines::all(Deadline::Absolute(100 * MS)),
        estimator: faasched_model::node::Estimate::Given,
        preempt_test: PreemptTest::Paper,
        host: Host {
            cpus,
            poll,
            cpu_limit: SEC,
            memory_limit: 64 << 20,
            max_sandboxes: 64,
            max_modules: faasched_wasm::DEFAULT_MAX_MODULES,
            max_compile: faasched_wasm::DEFAULT_MAX_COMPILE,
            max_output: faasched_wasm::DEFAULT_MAX_OUTPUT,
            cache: None,
            spin_steps_per_ms: None,
        },
        containers: None,
        admission: Default::default(),
    }
}

/// A WASI command a bench measures beside the no-op, and the request it
/// is sent each time.
#[derive(Debug, Clone)]
pub struct CommandRequest {
    /// The module (`.wasm` or `.wat`).
    pub module: Vec<u8>,
    /// The query (`QUERY_STRING`), if any.
    pub query: Option<String>,
    /// The body (standard input).
    pub body: Bytes,
}

impl CommandRequest {
    /// Reads the module at `module` and the body at `body` (none if
    /// `None`).
    ///
    /// # Errors
    ///
    /// A file that cannot be read, named.
    pub fn read(module: &Path, query: Option<String>, body: Option<&Path>) -> Result<Self> {
        let read = |path: &Path| {
            std::fs::read(path).with_context(|| format!("reading {}", path.display()))
        };
        Ok(Self {
            module: read(module)?,
            query,
            body: body
                .map(read)
                .transpose()?
                .map(Bytes::from)
                .unwrap_or_default(),
        })
    }

    /// One invocation of it.
    fn invoke(&self) -> Invoke {
        Invoke {
            function: COMMAND.into(),
            query: self.query.clone(),
            body: self.body.clone(),
            ..noop(100 * MS)
        }
    }
}

/// The name a bench registers its WASI command under.
const COMMAND: &str = "command";

/// Runs every measurement in each mode, with `command` (a WASI command
/// module) registered and measured too if given; `each` sees a mode as it
/// is done.
pub fn measure(
    settings: Settings,
    command: Option<&CommandRequest>,
    mut each: impl FnMut(&Mode) -> Result<()>,
) -> Result<Measured> {
    let cpus = if faasched_sys::sched::online_cpus() > 2 {
        vec![0, 1]
    } else {
        Vec::new()
    };
    let sandbox_setup = Latency::of(
        node(false, Vec::new())
            .start()?
            .executor()
            .with_runtime(|w| setups(w, settings.round_trips))?,
    );
    let mut modes = Vec::new();
    for (name, poll) in [("sleeping", false), ("polling", true)] {
        let runtime = Arc::new(node(poll, cpus.clone()).start()?);
        let rt = &*runtime;
        let warm = settings.round_trips / 10;
        round_trips(rt, warm, || noop(100 * MS))?;
        let noop_rt = Latency::of(round_trips(rt, settings.round_trips, || noop(100 * MS))?);
        let command_rt = match command {
            Some(command) => {
                rt.executor()
                    .register(COMMAND, &command.module, Default::default())
                    .map_err(|f| anyhow::anyhow!("the command: {f}"))?;
                round_trips(rt, warm, || command.invoke())?;
                Some(Latency::of(round_trips(rt, settings.round_trips, || {
                    command.invoke()
                })?))
            }
            None => None,
        };
        let noop_per_s = throughput(rt, settings.requests, settings.window, || noop(100 * MS))?;
        let preempting = Latency::of(preemptions(
            rt,
            settings.preemptions,
            Duration::ZERO,
            long,
            || noop(MS),
        )?);
        let switch = Latency::of_percentiles(rt.switches());
        let preempted = rt.status_json()["preemptions"].as_u64().unwrap_or(0);
        if preempted < settings.preemptions {
            bail!(
                "{name}: {preempted} preemptions in {} rounds: the urgent request did not preempt",
                settings.preemptions
            );
        }
        let noop_http = Latency::of(http_round_trips(runtime.clone(), settings.round_trips)?);
        let mode = Mode {
            mode: name,
            noop: noop_rt,
            command: command_rt,
            noop_http,
            noop_per_s,
            preempting_noop: preempting,
            switch,
        };
        each(&mode)?;
        modes.push(mode);
    }
    Ok(Measured {
        settings,
        cpus,
        sandbox_setup,
        modes,
    })
}

/// `n` `noop` sandboxes started and run to their end on this thread: each
/// one's set-up, ns.
pub(crate) fn setups(runtime: &faasched_wasm::Runtime, n: u64) -> Result<Vec<Nanos>> {
    let preempt = runtime.preempt();
    (0..n)
        .map(|_| {
            let mut sandbox = Sandbox::start(runtime, &preempt, "noop", 0)?;
            let setup = sandbox.stats().setup;
            while let Step::Preempted = sandbox.resume() {}
            Ok(setup)
        })
        .collect()
}

/// `n` sequential no-ops over HTTP/1.1 on one kept-alive loopback
/// connection to an ingress over `runtime`, after a tenth as many to warm
/// up: each one's round trip, ns.
fn http_round_trips(runtime: Arc<Runtime<WasmExecutor>>, n: u64) -> Result<Vec<Nanos>> {
    let tokio = faasched_live::node::ingress::runtime()?;
    let listener = tokio.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let ingress = Ingress::new(runtime);
        tokio.block_on(ingress.serve(listener, async {
            let _ = stopped.await;
        }))
    });
    let request = b"POST /invoke/noop HTTP/1.1\r\nhost: bench\r\ncontent-length: 0\r\n\r\n";
    let measured = http_sequence(addr, request, n);
    let _ = stop.send(());
    server
        .join()
        .map_err(|_| anyhow::anyhow!("the ingress thread panicked"))??;
    measured
}

/// `n` sequential `request`s over HTTP/1.1 on one kept-alive loopback
/// connection to `addr`, after a tenth as many to warm up: each one's
/// round trip, ns. Any answer but 200 is an error.
pub(crate) fn http_sequence(
    addr: std::net::SocketAddr,
    request: &[u8],
    n: u64,
) -> Result<Vec<Nanos>> {
    let stream = TcpStream::connect(addr).context("connecting to the server")?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let mut times = Vec::with_capacity(n as usize);
    let mut line = String::new();
    for i in 0..n + n / 10 {
        let sent = Instant::now();
        writer.write_all(request)?;
        let mut length = 0;
        let mut status = None;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                bail!("the server closed the connection");
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if status.is_none() {
                status = l.split(' ').nth(1).map(str::to_string);
            } else if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse()?;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        if status.as_deref() != Some("200") {
            bail!(
                "{} answered {status:?}: {}",
                String::from_utf8_lossy(request.split(|&b| b == b'\r').next().unwrap_or(b"")),
                String::from_utf8_lossy(&body)
            );
        }
        if i >= n / 10 {
            times.push(sent.elapsed().as_nanos() as Nanos);
        }
    }
    Ok(times)
}

/// Runs the bench ([`measure`]) in a release build and prints it: a block
/// per mode of idle threads, or with `json` all of it; with `command`, a
/// WASI command and its request, its round trip too.
pub fn run(settings: Settings, command: Option<&CommandRequest>, json: bool) -> Result<()> {
    release_only("runtime")?;
    if !json {
        outln!("{BUILD} build, sledgescale, 1 dispatcher x 1 worker")?;
    }
    let measured = measure(settings, command, |m| {
        if json {
            return Ok(());
        }
        outln!("{} idle threads:", m.mode)?;
        outln!("  no-op in process      {}", m.noop.counted())?;
        if let Some(command) = &m.command {
            outln!("  command in process    {}", command.counted())?;
        }
        outln!("  no-op over HTTP       {}", m.noop_http.counted())?;
        outln!(
            "  no-op throughput      {:.0} requests/s ({} in flight)",
            m.noop_per_s,
            settings.window
        )?;
        outln!(
            "  no-op preempting a {} ms spin  {}",
            LONG_US / 1000,
            m.preempting_noop.counted()
        )?;
        outln!("    of which ask to switch  {}", m.switch.counted())?;
        Ok(())
    })?;
    if json {
        return outln!("{}", serde_json::to_string_pretty(&measured)?);
    }
    outln!(
        "fresh noop sandbox from the pool  {}",
        measured.sandbox_setup.counted()
    )?;
    if measured.cpus.is_empty() {
        outln!("threads not pinned (2 CPUs or fewer)")
    } else {
        outln!("dispatcher and worker pinned to CPUs {:?}", measured.cpus)
    }
}
