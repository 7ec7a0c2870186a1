//! `faasched node serve`: the node runtime, live, over HTTP.

use super::args::{PreemptArg, policy_help};
use anyhow::{Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::node::live::{LiveNode, serve};
use faasched_live::node::ingress::StopSignal;
use faasched_model::{MS, Nanos};
use faasched_policy::node::PreemptTest;
use std::time::Duration;

/// Serve WebAssembly functions over HTTP: dispatcher threads place each
/// request on a worker thread by a node policy (the simulator's, unchanged),
/// and the worker runs it in a fresh sandbox, preemptible at any loop.
///
/// Built-in functions: noop, fib?n=N, spin?us=N (N µs of CPU, calibrated at
/// start), hash?n=BYTES, matmul?n=N, resize?w=W&h=H; `POST /register/NAME`
/// adds a module (docs/RUNTIME.md gives its ABI). Try:
///
///   curl -X POST '127.0.0.1:8080/invoke/fib?n=25'
///
///   curl 127.0.0.1:8080/metrics
///
/// SIGTERM or Ctrl-C stops accepting, answers every request already read,
/// and exits.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Address to listen on (port 0 picks a free one, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// The node policy every dispatcher runs.
    #[arg(long, short = 'p', default_value = "sledgescale", long_help = policy_help())]
    policy: String,
    /// Workers in each dispatcher's group.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// Dispatchers, each over its own group of --workers; requests go to
    /// them in turn.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    dispatchers: u32,
    /// CPUs to pin the threads to, dispatchers first, then workers
    /// (`2-7` or `2,3,4`); by default they are not pinned.
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// A built-in workload whose functions requests name in
    /// x-faasched-function (their ids, and what darc plans from).
    #[arg(long, short = 'w')]
    workload: Option<String>,
    /// Relative deadline of a request without x-faasched-deadline-us, ms.
    #[arg(long, default_value_t = 100.0)]
    deadline_ms: f64,
    /// What policies are told of a request's work: `exact` (spin's µs; for
    /// other functions, the median below) or `median` (the median of the
    /// function's last 256 CPU times, SledgeScale's estimator).
    #[arg(long, value_parser = ["exact", "median"], default_value = "exact")]
    estimate: String,
    /// `sledgescale`'s preemption test.
    #[arg(long, value_enum, default_value_t = PreemptArg::Paper)]
    preempt_test: PreemptArg,
    /// Idle workers and dispatchers spin instead of sleeping: lower
    /// latency, a busy core each.
    #[arg(long)]
    poll: bool,
    /// CPU time one request may use before it is stopped, ms.
    #[arg(long, default_value_t = 1000.0)]
    cpu_limit_ms: f64,
    /// Linear memory one sandbox may grow to, MiB.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    memory_limit_mib: u64,
    /// Sandboxes alive at once (running or preempted); a request beyond
    /// them is refused as overloaded.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_sandboxes: u32,
    /// Seconds to answer the requests already read after SIGTERM.
    #[arg(long, default_value_t = 10.0)]
    drain_s: f64,
}

/// A positive, finite number of ms as ns.
fn ms(value: f64, flag: &str) -> Result<Nanos> {
    if !(value.is_finite() && value > 0.0) {
        bail!("{flag}: {value} is not a positive number of ms");
    }
    Ok((value * MS as f64).round() as Nanos)
}

/// `2-4,7` as [2, 3, 4, 7].
fn cpu_list(text: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let bad = || anyhow::anyhow!("--cpus: `{part}` is not a CPU or a range like 2-5");
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi): (usize, usize) = (
                    lo.parse().map_err(|_| bad())?,
                    hi.parse().map_err(|_| bad())?,
                );
                if lo > hi {
                    return Err(bad());
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(cpus)
}

impl Args {
    pub fn execute(self) -> Result<()> {
        if !(self.drain_s.is_finite() && self.drain_s >= 0.0) {
            bail!("--drain-s: {} is not a number of seconds", self.drain_s);
        }
        let node = LiveNode {
            policy: self.policy.clone(),
            dispatchers: self.dispatchers,
            workers: self.workers,
            cpus: match &self.cpus {
                Some(list) => cpu_list(list)?,
                None => Vec::new(),
            },
            workload: self.workload.clone(),
            deadline: ms(self.deadline_ms, "--deadline-ms")?,
            median_estimates: self.estimate == "median",
            preempt_test: match self.preempt_test {
                PreemptArg::Paper => PreemptTest::Paper,
                PreemptArg::Code => PreemptTest::Code,
            },
            poll: self.poll,
            cpu_limit: ms(self.cpu_limit_ms, "--cpu-limit-ms")?,
            memory_limit: self.memory_limit_mib << 20,
            max_sandboxes: self.max_sandboxes,
        };
        let served = serve(
            &node,
            &self.listen,
            Duration::from_secs_f64(self.drain_s),
            |addr, runtime| {
                let spin = runtime.executor().with_runtime(|r| r.spin_steps_per_ms());
                eprintln!(
                    "faasched node serve: {} on {} dispatcher(s) x {} worker(s), listening on {addr} \
                     (spin: {spin} steps per ms)",
                    node.policy, node.dispatchers, node.workers
                );
            },
        )?;
        let d = &served.drained;
        eprintln!(
            "faasched node serve: stopped by {}; {} invocations accepted, {} left unanswered, {} connections cut",
            match served.signal {
                Some(StopSignal::Terminate) => "SIGTERM",
                Some(StopSignal::Interrupt) => "SIGINT",
                None => "the ingress",
            },
            d.accepted,
            d.unanswered,
            d.connections_cut
        );
        if d.unanswered > 0 {
            bail!("{} invocations were cut unanswered", d.unanswered);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_ranges_and_refuse_nonsense() {
        assert_eq!(cpu_list("2-4,7").unwrap(), [2, 3, 4, 7]);
        assert_eq!(cpu_list("0").unwrap(), [0]);
        for bad in ["", "a", "4-2", "1-", "1,,2"] {
            assert!(cpu_list(bad).is_err(), "{bad}");
        }
    }
}
