//! The live cluster under network faults: a gateway and two nodes, each
//! in a network namespace this test makes, joined by veth pairs with
//! addresses private to it, loaded by `cluster load` (in the gateway's
//! namespace) while one node is partitioned off (its end of the link
//! down, so that its packets vanish) and healed, and the other is killed
//! and restarted, and while a node's link is slowed to 64 kbit/s (a token
//! bucket, `tc tbf`: every answer queues behind the ones before it). Each
//! fault is a load run of its own, and each checks that every call was
//! answered exactly once (a result, or an error that says why), that no
//! more were lost than were in flight on the faulty node, and counts what
//! was refused. Fixed delays and random loss are not made: this kernel has
//! no `netem` queueing discipline.
//!
//! Needs root and `ip` (iproute2); without them it says so and passes,
//! unless `FAASCHED_REQUIRE_NETNS` is set, as CI sets it.

use crate::common::server::Server;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

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

/// Node `i` in its namespace: FunctionBench's functions in containers at a
/// thousandth of their times, its load published every 50 ms, the
/// deployment's token (it listens on an address others can reach).
fn node(net: &Net, i: usize, token: &Path) -> Server {
    Server::start_in(
        &net.node(i),
        &[
            "node",
            "serve",
            "--listen",
            &Net::addr(i),
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
        "{what}: {} calls, answered by {:?}, refused {:?}",
        run.invocations, run.per_node, run.errors
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
    let mut nodes = vec![node(&net, 0, &token), node(&net, 1, &token)];
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

    // Node 1 killed, and restarted 1 s later at the same address: its
    // refused connects take it out at once, and the gateway's polls bring
    // it back.
    let crashed = load(&net, "3", || {
        std::thread::sleep(Duration::from_millis(700));
        drop(nodes.pop());
        std::thread::sleep(Duration::from_millis(1_000));
        nodes.push(node(&net, 1, &token));
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
