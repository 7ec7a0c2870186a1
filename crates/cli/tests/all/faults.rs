//! The live cluster under network faults: a gateway and two nodes, each
//! in a network namespace this test makes, joined by veth pairs with
//! addresses private to it, loaded by `cluster load` (in the gateway's
//! namespace) while one node is partitioned off (its end of the link
//! down, so that its packets vanish) and healed, and the other is killed
//! and restarted; while a node's link is slowed to 64 kbit/s (a token
//! bucket, `tc tbf`: every answer queues behind the ones before it); while
//! a tenth of a link's packets are lost (a classic BPF filter on each end
//! that drops a random share, `tc filter ... bpf`); and while every byte
//! to and from a node is delayed 100 ms each way. Each fault is a load run
//! of its own, and each checks that every call was answered exactly once
//! (a result, or an error that says why), that no more were lost than were
//! in flight on the faulty node, and counts what was refused.
//!
//! This kernel has no `netem`, the queueing discipline that delays and
//! drops packets, so loss is the BPF filter's and the delay a relay's:
//! node 0 listens on loopback in its namespace, behind a TCP relay this
//! test runs at the node's address there, which writes what it reads on
//! either side `delay` later. So a connect to node 0 crosses the link and
//! fails with it, as one to a node would. The relay delays the bytes, not
//! the packets: connects and TCP's own acknowledgements cross at the
//! link's speed.
//!
//! Needs root and `ip` (iproute2); without them it says so and passes,
//! unless `FAASCHED_REQUIRE_NETNS` is set, as CI sets it.

use crate::common::server::Server;
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// The test's namespaces and links, removed (with whatever runs in them)
/// on every way out of the test.
struct Net {
    prefix: String,
}

impl Net {
    /// The gateway's namespace and one per node, linked to the gateway's
    /// by a veth pair each: node `i` at `10.77.{i+1}.2`, the gateway's end
    /// at `.1`. `None` where namespaces cannot be made here.
    fn make(nodes: usize) -> Option<Net> {
        let net = Net {
            prefix: format!("fh{}", std::process::id()),
        };
        if ip(&["netns", "add", &net.gateway()]).is_err() {
            return None;
        }
        ip(&["-n", &net.gateway(), "link", "set", "lo", "up"]).unwrap();
        for i in 0..nodes {
            let (ns, near, far) = (net.node(i), net.near(i), net.far(i));
            ip(&["netns", "add", &ns]).unwrap();
            ip(&["link", "add", &near, "type", "veth", "peer", "name", &far]).unwrap();
            ip(&["link", "set", &near, "netns", &net.gateway()]).unwrap();
            ip(&["link", "set", &far, "netns", &ns]).unwrap();
            let subnet = i + 1;
            ip(&[
                "-n",
                &net.gateway(),
                "addr",
                "add",
                &format!("10.77.{subnet}.1/30"),
                "dev",
                &near,
            ])
            .unwrap();
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("10.77.{subnet}.2/30"),
                "dev",
                &far,
            ])
            .unwrap();
            ip(&["-n", &net.gateway(), "link", "set", &near, "up"]).unwrap();
            ip(&["-n", &ns, "link", "set", &far, "up"]).unwrap();
            ip(&["-n", &ns, "link", "set", "lo", "up"]).unwrap();
        }
        Some(net)
    }

    fn gateway(&self) -> String {
        format!("{}g", self.prefix)
    }

    fn node(&self, i: usize) -> String {
        format!("{}n{i}", self.prefix)
    }

    /// The gateway's end of node `i`'s link.
    fn near(&self, i: usize) -> String {
        format!("{}g{i}", self.prefix)
    }

    /// Node `i`'s end of its link.
    fn far(&self, i: usize) -> String {
        format!("{}n{i}", self.prefix)
    }

    /// Where node `i` listens.
    fn addr(i: usize) -> String {
        format!("10.77.{}.2:8080", i + 1)
    }

    /// Node `i`'s end of its link up or down: down, the node's packets are
    /// lost (a partition); up, they flow again.
    fn link(&self, i: usize, up: bool) {
        let state = if up { "up" } else { "down" };
        ip(&["-n", &self.node(i), "link", "set", &self.far(i), state]).unwrap();
    }

    /// Node `i`'s answers sent at `rate` (`200kbit`) through a token
    /// bucket, or (`None`) at the link's speed again.
    fn throttle(&self, i: usize, rate: Option<&str>) {
        let (ns, dev) = (self.node(i), self.far(i));
        let mut args = vec!["-n", &ns, "qdisc"];
        match rate {
            Some(rate) => args.extend([
                "add", "dev", &dev, "root", "tbf", "rate", rate, "burst", "1600", "latency", "1s",
            ]),
            None => args.extend(["del", "dev", &dev, "root"]),
        }
        let out = Command::new("tc").args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "tc {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Net {
    /// A random `percent` of the packets each way on node `i`'s link
    /// dropped, or (`None`) none: a classic BPF program on both ends'
    /// egress, run in direct-action mode (`tc filter ... bpf da bytecode`),
    /// that loads a random 32-bit number and returns `TC_ACT_SHOT` (2)
    /// below `percent`% of 2³², `TC_ACT_OK` (0) otherwise. Returns the
    /// packets the filters dropped, counted as they are removed.
    fn lose(&self, i: usize, percent: Option<u32>) -> u64 {
        assert!(percent.is_none_or(|p| p < 100));
        let ends = [(self.node(i), self.far(i)), (self.gateway(), self.near(i))];
        let mut dropped = 0;
        for (ns, dev) in &ends {
            let tc = |args: &[&str]| {
                let out = Command::new("tc")
                    .args(["-n", ns])
                    .args(args)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "tc {args:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            let Some(percent) = percent else {
                // "qdisc clsact ffff: ...\n Sent B bytes P pkt (dropped N, ..."
                let stats = tc(&["-s", "qdisc", "show", "dev", dev]);
                let clsact = &stats[stats.find("qdisc clsact").unwrap()..];
                let count = clsact.split("(dropped ").nth(1).unwrap();
                dropped += count[..count.find(',').unwrap()].parse::<u64>().unwrap();
                tc(&["qdisc", "del", "dev", dev, "clsact"]);
                continue;
            };
            // ld [SKF_AD_OFF + SKF_AD_RANDOM]; jge #below, pass; ret #2; pass: ret #0
            let below = (u64::from(percent) << 32) / 100;
            let random = 0xffff_f000u32 + 56;
            let program = format!("4,32 0 0 {random},53 1 0 {below},6 0 0 2,6 0 0 0");
            tc(&["qdisc", "add", "dev", dev, "clsact"]);
            tc(&[
                "filter", "add", "dev", dev, "egress", "bpf", "da", "bytecode", &program,
            ]);
        }
        dropped
    }
}

/// A TCP relay in a namespace: each connection it accepts it joins to a
/// new one to `to`, and what it reads on either side it writes on the
/// other [`Relay::delay`] after it read it (0: at once), in order. Its
/// threads and sockets end with it.
struct Relay {
    delay_ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// Every socket it holds, shut on drop so that its threads end.
    sockets: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    /// A relay in namespace `ns` at `listen`, to `to`.
    fn start(ns: &str, listen: &str, to: &str) -> Relay {
        let delay_ms = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let sockets = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let (netns, listen, to) = (
            format!("/run/netns/{ns}"),
            listen.to_string(),
            to.to_string(),
        );
        let (delay, stopped, held) = (delay_ms.clone(), stop.clone(), sockets.clone());
        // A thread's network namespace is its own: this one enters the
        // namespace, and the sockets it makes (the listener, and each
        // connection to `to`) are there, whichever thread reads them.
        std::thread::spawn(move || {
            let file = std::fs::File::open(&netns).unwrap();
            move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))
                .unwrap_or_else(|e| panic!("setns {netns}: {e}"));
            let listener = TcpListener::bind(&listen).unwrap();
            tx.send(()).unwrap();
            listener.set_nonblocking(true).unwrap();
            while !stopped.load(Ordering::SeqCst) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                let Ok(upstream) =
                    TcpStream::connect_timeout(&to.parse().unwrap(), Duration::from_millis(500))
                else {
                    continue; // The client sees its connection close.
                };
                for (from, into) in [(&client, &upstream), (&upstream, &client)] {
                    let (from, into) = (from.try_clone().unwrap(), into.try_clone().unwrap());
                    held.lock().unwrap().extend([from.try_clone().unwrap()]);
                    pump(from, into, delay.clone());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        Relay {
            delay_ms,
            stop,
            sockets,
        }
    }

    /// Every byte from now on waits `ms` in the relay, each way.
    fn delay(&self, ms: u64) {
        self.delay_ms.store(ms, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for socket in self.sockets.lock().unwrap().drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` to `into`, each chunk written `delay` ms after it was
/// read: a reader thread stamps the chunks, a writer sends each when due.
/// At `from`'s end (or an error) `into`'s writing half is shut.
fn pump(mut from: TcpStream, mut into: TcpStream, delay: Arc<AtomicU64>) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0; 64 << 10];
        while let Ok(n @ 1..) = from.read(&mut buf) {
            if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        for (read, chunk) in rx {
            let due = read + Duration::from_millis(delay.load(Ordering::SeqCst));
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if into.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = into.shutdown(Shutdown::Write);
    });
}

impl Drop for Net {
    fn drop(&mut self) {
        // Deleting a namespace deletes the links in it; what runs there
        // is the servers', which their own drops kill first.
        let out = Command::new("ip").args(["netns", "list"]).output();
        let names = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for line in names.lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            if name.starts_with(&self.prefix) {
                let _ = ip(&["netns", "del", name]);
            }
        }
    }
}

/// `ip ARGS`, its stderr as the error.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Where node 0 listens in its namespace, behind the relay at its address.
const RELAYED: &str = "127.0.0.1:8081";

/// Node `i` in its namespace, at `listen`: FunctionBench's functions in
/// containers at a thousandth of their times, its load published every
/// 50 ms, the deployment's token.
fn node(net: &Net, i: usize, token: &Path, listen: &str) -> Server {
    Server::start_in(
        &net.node(i),
        &[
            "node",
            "serve",
            "--listen",
            listen,
            "--token-file",
            token.to_str().unwrap(),
            "--load-period-ms",
            "50",
            "--memory-mb",
            "1024",
            "--functions",
            "functionbench",
            "--time-scale",
            "0.001",
        ],
    )
}

/// What one load run's calls came to.
#[derive(Debug)]
struct Run {
    invocations: u64,
    finished: u64,
    errors: serde_json::Map<String, serde_json::Value>,
    /// Answered calls per node address.
    per_node: Vec<(String, u64)>,
    /// The answered calls' 99th percentile latency.
    p99_ms: f64,
}

impl Run {
    fn errors(&self) -> u64 {
        self.errors.values().map(|v| v.as_u64().unwrap()).sum()
    }

    fn served_by(&self, addr: &str) -> u64 {
        self.per_node
            .iter()
            .find(|(n, _)| n == addr)
            .map_or(0, |(_, c)| *c)
    }
}

/// `cluster load` from the gateway's namespace for `seconds`, with `fault`
/// done by this thread meanwhile.
fn load(net: &Net, seconds: &str, fault: impl FnOnce()) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &net.gateway(),
            env!("CARGO_BIN_EXE_faasched"),
        ])
        .args([
            "cluster",
            "load",
            "--target",
            "127.0.0.1:8080",
            "--clients",
            "4",
            "--seconds",
            seconds,
            "--time-scale",
            "0.001",
            "--drain-ms",
            "30000",
            "--timeout-ms",
            "30000",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    fault();
    let done = child.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "cluster load: {}",
        String::from_utf8_lossy(&done.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let row = &summary["policies"][0];
    let settings = &summary["settings"];
    Run {
        invocations: row["invocations"].as_u64().unwrap(),
        finished: row["finished"].as_u64().unwrap(),
        errors: settings["errors"].as_object().unwrap().clone(),
        p99_ms: row["latency_p99_ms"].as_f64().unwrap(),
        per_node: settings["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["node"].as_str().unwrap().to_string(),
                    n["invocations"].as_u64().unwrap(),
                )
            })
            .collect(),
    }
}

/// Every call of `run` had one answer: a result, or an error that says
/// why; none was lost to a client's time-out, and at most the 4 clients'
/// calls in flight on a faulty node were lost with it.
fn answered_once(what: &str, run: &Run) {
    assert!(run.invocations > 0, "{what}: {run:?}");
    assert_eq!(
        run.invocations,
        run.finished + run.errors(),
        "{what}: {run:?}"
    );
    let served: u64 = run.per_node.iter().map(|(_, c)| c).sum();
    assert_eq!(served, run.finished, "{what}: {run:?}");
    for kind in run.errors.keys() {
        assert!(
            ["node-unreachable", "overloaded"].contains(&kind.as_str()),
            "{what}: an error of kind {kind}: {run:?}"
        );
    }
    assert!(run.errors() <= 4, "{what}: {run:?}");
    eprintln!(
        "{what}: {} calls, answered by {:?}, refused {:?}, p99 {} ms",
        run.invocations, run.per_node, run.errors, run.p99_ms
    );
}

#[test]
fn partitions_and_crashes_lose_no_call() {
    let Some(net) = Net::make(2) else {
        let why = "cannot make network namespaces here (needs root and iproute2)";
        assert!(
            std::env::var_os("FAASCHED_REQUIRE_NETNS").is_none(),
            "FAASCHED_REQUIRE_NETNS is set, but {why}"
        );
        eprintln!("skipped: {why}");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("cluster.token");
    std::fs::write(&token, "5b9f0c2d7e4a61839af0b2c4d6e8f1a3\n").unwrap();
    // Node 0 behind its relay, which delays nothing until the delay phase.
    let relay = Relay::start(&net.node(0), &Net::addr(0), RELAYED);
    let mut nodes = vec![
        node(&net, 0, &token, RELAYED),
        node(&net, 1, &token, &Net::addr(1)),
    ];
    let (a, b) = (Net::addr(0), Net::addr(1));
    let gateway = Server::start_in(
        &net.gateway(),
        &[
            "cluster",
            "gateway",
            "--listen",
            "127.0.0.1:8080",
            "--node",
            &a,
            "--node",
            &b,
            "--token-file",
            token.to_str().unwrap(),
            "--period-ms",
            "50",
            "--forward-timeout-s",
            "2",
            "--time-scale",
            "0.001",
        ],
    );
    let quiet = load(&net, "1", || {});
    answered_once("quiet", &quiet);
    assert_eq!(quiet.errors(), 0, "{quiet:?}");

    // Node 0 partitioned off for 0.5 s, shorter than the forward
    // time-out: TCP resends what was in flight once the link is back, and
    // nothing is lost.
    let blip = load(&net, "2", || {
        std::thread::sleep(Duration::from_millis(700));
        net.link(0, false);
        std::thread::sleep(Duration::from_millis(500));
        net.link(0, true);
    });
    answered_once("short partition", &blip);
    assert_eq!(blip.errors(), 0, "{blip:?}");

    // Node 0 partitioned off for 3 s of a 5 s run, longer than the
    // forward time-out (2 s): its calls in flight are answered 502, the
    // gateway's probe takes it out and the rest go to node 1.
    let partitioned = load(&net, "5", || {
        std::thread::sleep(Duration::from_millis(700));
        net.link(0, false);
        std::thread::sleep(Duration::from_millis(3_000));
        net.link(0, true);
    });
    answered_once("partition", &partitioned);
    assert!(partitioned.served_by(&b) > 0, "{partitioned:?}");

    // Node 0's answers through a 64 kbit/s bucket for 1.5 s.
    let slowed = load(&net, "3", || {
        std::thread::sleep(Duration::from_millis(700));
        net.throttle(0, Some("64kbit"));
        std::thread::sleep(Duration::from_millis(1_500));
        net.throttle(0, None);
    });
    answered_once("slow link", &slowed);

    // A tenth of node 0's packets lost each way for 2 s: TCP resends
    // them, and nothing is lost.
    let mut dropped = 0;
    let lossy = load(&net, "3", || {
        std::thread::sleep(Duration::from_millis(500));
        net.lose(0, Some(10));
        std::thread::sleep(Duration::from_millis(2_000));
        dropped = net.lose(0, None);
    });
    answered_once("lossy link", &lossy);
    eprintln!("lossy link: {dropped} packets dropped");
    assert!(dropped > 0, "the filters dropped nothing: {lossy:?}");
    assert!(lossy.served_by(&a) > 0, "{lossy:?}");

    // Every byte to and from node 0 100 ms late each way for 2 s: its
    // answers come 200 ms later, well within the forward timeout.
    let delayed = load(&net, "3", || {
        std::thread::sleep(Duration::from_millis(500));
        relay.delay(100);
        std::thread::sleep(Duration::from_millis(2_000));
        relay.delay(0);
    });
    answered_once("delayed link", &delayed);
    assert!(delayed.served_by(&a) > 0, "{delayed:?}");
    assert!(
        delayed.p99_ms >= 200.0,
        "no call felt the delay: {delayed:?}"
    );

    // Node 1 killed, and restarted 1 s later at the same address: its
    // refused connects take it out at once, and the gateway's polls bring
    // it back.
    let crashed = load(&net, "3", || {
        std::thread::sleep(Duration::from_millis(700));
        drop(nodes.pop());
        std::thread::sleep(Duration::from_millis(1_000));
        nodes.push(node(&net, 1, &token, &Net::addr(1)));
    });
    answered_once("crash", &crashed);
    assert!(crashed.served_by(&a) > 0, "{crashed:?}");

    // Healed: both nodes serve again and nothing is refused.
    let healed = load(&net, "2", || {});
    answered_once("healed", &healed);
    assert_eq!(healed.errors(), 0, "{healed:?}");
    assert!(
        healed.served_by(&a) > 0 && healed.served_by(&b) > 0,
        "{healed:?}"
    );
    let (clean, rest) = gateway.stop();
    assert!(clean, "{rest}");
}
