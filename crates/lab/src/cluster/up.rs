//! A live cluster on this machine: node runtimes as child processes of
//! this one, each pinned to cores of its own, for a gateway to route over.
//!
//! Each node is `faasched node serve` (this same binary) on a free loopback
//! port, in a process group of its own (a Ctrl-C reaches the supervisor,
//! which stops the nodes after its gateway has drained), told to die with
//! its parent (SIGKILL if the supervisor dies outright). Its first line on
//! stderr gives its address; the rest is passed on, prefixed with the
//! node's number. Dropping [`Nodes`] kills whatever is still running, so
//! no exit path leaves a node behind.

use anyhow::{Context, Result, anyhow, bail};
use faasched_sys::process;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a node may take past its own drain to exit after SIGTERM
/// before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// One node process.
struct Node {
    child: Child,
    pidfd: OwnedFd,
    addr: SocketAddr,
    cpus: Option<String>,
}

/// The node processes of a live cluster.
pub struct Nodes {
    nodes: Vec<Node>,
}

/// How one node ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeExit {
    /// Its address.
    pub addr: SocketAddr,
    /// Whether it exited with status 0 after SIGTERM (it answered all it
    /// had accepted); false if it failed or had to be killed.
    pub clean: bool,
}

impl Nodes {
    /// Starts `count` nodes of `cores` cores and `workers` workers each
    /// (the workers wrap over the cores, and the load is reported over the
    /// cores): node i pinned to CPUs `i·cores .. (i+1)·cores` where the
    /// machine has that many, unpinned otherwise; `args` go to each `node
    /// serve` as given.
    pub fn start(count: u32, cores: u32, workers: u32, args: &[String]) -> Result<Nodes> {
        if count == 0 || cores == 0 || workers == 0 {
            bail!("a cluster needs at least one node of at least one core and one worker");
        }
        let exe = std::env::current_exe().context("this program's path, to start its nodes")?;
        let pin = faasched_sys::sched::online_cpus() >= (count * cores) as usize;
        let mut nodes = Nodes { nodes: Vec::new() };
        for i in 0..count {
            let cpus = pin.then(|| match cores {
                1 => format!("{i}"),
                c => format!("{}-{}", i * c, (i + 1) * c - 1),
            });
            let mut command = Command::new(&exe);
            command
                .args(["node", "serve", "--listen", "127.0.0.1:0"])
                .args(["--workers", &workers.to_string()])
                .args(["--load-cores", &cores.to_string()])
                // A sandbox for every worker's invocation at least, beyond
                // the node's default of 128.
                .args(["--max-sandboxes", &workers.max(128).to_string()])
                .args(cpus.iter().flat_map(|c| ["--cpus", c.as_str()]))
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .process_group(0);
            process::dies_with_parent(&mut command, libc::SIGKILL);
            let mut child = command
                .spawn()
                .with_context(|| format!("starting node {i}"))?;
            let pidfd = process::pidfd_open(child.id() as libc::pid_t)
                .with_context(|| format!("node {i}'s pidfd"))?;
            let stderr = child
                .stderr
                .take()
                .ok_or_else(|| anyhow!("node {i}: no stderr"))?;
            // Held by `nodes` from here: an error below kills it.
            let mut lines = BufReader::new(stderr);
            let mut first = String::new();
            lines.read_line(&mut first)?;
            let addr = first
                .split("listening on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|a| a.parse().ok());
            nodes.nodes.push(Node {
                child,
                pidfd,
                addr: addr.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0))),
                cpus,
            });
            if addr.is_none() {
                bail!("node {i} did not start: {}", first.trim());
            }
            std::thread::spawn(move || {
                for line in lines.lines().map_while(Result::ok) {
                    eprintln!("node {i}: {line}");
                }
            });
        }
        Ok(nodes)
    }

    /// Each node's address, in order.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(|n| n.addr).collect()
    }

    /// Each node's process id and the CPUs it is pinned to, in order.
    pub fn placement(&self) -> Vec<(u32, Option<&str>)> {
        self.nodes
            .iter()
            .map(|n| (n.child.id(), n.cpus.as_deref()))
            .collect()
    }

    /// Stops every node with SIGTERM (each answers what it accepted, for
    /// `drain` at most) and waits for them, killing any that outlives its
    /// drain by [`EXIT_GRACE`].
    pub fn stop(mut self, drain: Duration) -> Vec<NodeExit> {
        for n in &self.nodes {
            let _ = process::signal(&n.pidfd, libc::SIGTERM);
        }
        let deadline = Instant::now() + drain + EXIT_GRACE;
        let mut exits = Vec::new();
        for n in &mut self.nodes {
            let clean = loop {
                match n.child.try_wait() {
                    Ok(Some(status)) => break status.success(),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    _ => {
                        let _ = n.child.kill();
                        let _ = n.child.wait();
                        break false;
                    }
                }
            };
            exits.push(NodeExit {
                addr: n.addr,
                clean,
            });
        }
        exits
    }
}

impl Drop for Nodes {
    /// Kills and reaps whatever still runs (an error, a panic, a stop that
    /// already waited finds nothing left).
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if matches!(n.child.try_wait(), Ok(None)) {
                let _ = n.child.kill();
            }
            let _ = n.child.wait();
        }
    }
}
