//! A node run, live: the requests `node simulate` would run, sent to a real
//! node runtime (WebAssembly sandboxes on worker threads) at their arrival
//! times, and summarised as the simulation is.
//!
//! Each request becomes `spin?us=W` (W its work in µs, calibrated CPU
//! time) labelled with its function, with its own deadline. A driver
//! thread submits it in process, without a transport (the HTTP ingress's
//! cost is measured apart, in `faasched bench runtime`), when it is due: it
//! sleeps until the request's arrival and counts the request as received
//! then, so a driver that wakes late delays the request's latency, never
//! its schedule (no coordinated omission). The runtime reports when each
//! request first ran and finished; the outcomes go to the same
//! [`Collector`] as the simulator's.

use super::catalog::NodePolicy;
use super::live::Host;
use super::run::{NodeOptions, NodeSetup};
use super::sweep::Sweep;
use crate::interrupt;
use crate::output::Outputs;
use anyhow::{Context, Result, anyhow, bail};
use faasched_live::node::invoke::{Answer, Cancel, Failure, Invoke};
use faasched_live::node::runtime::{Runtime, RuntimeConfig};
use faasched_live::node::wasm::WasmExecutor;
use faasched_model::node::{Request, RequestInfo, RequestOutcome, WorkerId};
use faasched_model::{Nanos, SEC, US};
use faasched_report::Staged;
use faasched_report::node::{Collector, PolicySummary, Usage};
use faasched_sim::node::{Assign, Estimate as Estimator};
use faasched_sys::clock::FineTimerSlack;
use faasched_workload::node::Estimate;
use indicatif::ProgressBar;
use serde_json::{Value, json};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Between the threads' start and the first arrival: the threads settle.
const LEAD: Duration = Duration::from_millis(20);

/// The longest a driver waiting for an arrival sleeps before it looks for
/// answers and a Ctrl-C again.
const TICK: Duration = Duration::from_millis(10);

/// How long the run waits, after its last arrival, for an answer before it
/// gives up on the rest: longer than any request of a sane run takes.
const STALL: Duration = Duration::from_secs(60);

/// `spin`'s argument for `work`: whole µs, at least 1.
pub fn spin_us(work: Nanos) -> u64 {
    ((work + US / 2) / US).max(1)
}

/// How late the driver handed requests to the node: from each request's
/// arrival time to its submission, ns. A late request's latency counts
/// from its arrival all the same; this says how much of it the sender, not
/// the node, caused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lateness {
    /// Median.
    pub p50: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// Largest.
    pub max: Nanos,
}

impl Lateness {
    pub(crate) fn of(mut late: Vec<Nanos>) -> Lateness {
        late.sort_unstable();
        let at = |q: f64| match late.len() {
            0 => 0,
            n => late[((n - 1) as f64 * q).round() as usize],
        };
        Lateness {
            p50: at(0.5),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// What a replay measured.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The summary, as a simulation's.
    pub summary: PolicySummary,
    /// The offered rate.
    pub rate: f64,
    /// How late the requests were sent.
    pub late: Lateness,
    /// The CPU time the finished requests' sandboxes used over the work
    /// they asked for: above 1, the machine ran the workload at a higher
    /// load than it asks (a calibrated spin slowed by a busy sibling
    /// hyperthread, the sandbox's own set-up).
    pub cpu_over_work: Option<f64>,
}

/// Runs `policy` live on `host` over the setup's requests and summarises
/// it as [`NodeSetup::run`] does, calling `each` on every outcome as its
/// answer comes.
pub fn replay(
    setup: &NodeSetup,
    policy: &NodePolicy,
    host: &Host,
    mut each: impl FnMut(&RequestOutcome),
) -> Result<Replayed> {
    let estimator = match setup.config.estimate {
        Estimator::Given if setup.estimate == Estimate::Exact => Estimator::Given,
        Estimator::Given => bail!(
            "--estimate {}: a live node takes exact or median estimates (a sandbox's spin is \
             its own exact estimate)",
            match setup.estimate {
                Estimate::Exact => "exact".to_string(),
                e => format!("noisy={}", e.error()),
            }
        ),
        median @ Estimator::Median { .. } => median,
    };
    if !matches!(setup.config.assign, Assign::Equal) {
        bail!("--assign random: a live node hands requests to its dispatchers in turn");
    }
    let requests: Vec<Request> = setup
        .requests()?
        .collect::<faasched_workload::Result<_>>()
        .context("the workload")?;
    let knowledge = setup.knowledge();
    let policies = (0..setup.config.dispatchers)
        .map(|_| policy.build(&knowledge))
        .collect::<Result<Vec<_>>>()?;
    let functions = setup.functions();
    let config = RuntimeConfig {
        dispatchers: setup.config.dispatchers,
        workers: setup.config.workers,
        estimator,
        // Ids as the workload numbers them, for the policies planned from
        // it (DARC) and for the summary's names.
        functions: (0..functions.len() as u32)
            .map(|i| {
                functions
                    .get(faasched_model::FunctionId(i))
                    .map_or_else(|| format!("#{i}"), |f| f.name.to_string())
            })
            .collect(),
        ..RuntimeConfig::default()
    };
    let runtime = host
        .launch(config, policies, None)
        .with_context(|| format!("{}: the live node", policy.name()))?;
    let mut tally = Tally {
        collector: Collector::new(policy.name()),
        cpu: vec![0; setup.config.dispatchers * setup.config.workers],
        workers: setup.config.workers,
        last: 0,
        used: (0, 0),
    };
    let mut fold = |i: usize, answer: Answer| -> Result<()> {
        let r = &requests[i];
        if let Ok(done) = &answer {
            tally.used.0 += u128::from(done.cpu);
            tally.used.1 += u128::from(r.work);
        }
        let outcome = outcome(r, answer).map_err(|failure| {
            anyhow!(
                "{}: request {} ({}, {} µs) failed live: {failure}",
                policy.name(),
                r.id.0,
                r.function.name,
                spin_us(r.work)
            )
        })?;
        tally.record(&outcome);
        each(&outcome);
        Ok(())
    };
    // Sleeps end when asked, not up to 50 µs later.
    let _slack = FineTimerSlack::set();
    let mut sent = Sent {
        cancels: Vec::with_capacity(requests.len()),
        late: Vec::with_capacity(requests.len()),
    };
    let driven = drive(&runtime, &requests, &mut sent, &mut fold);
    if driven.is_err() {
        // Ctrl-C or a failed request: what is still queued is not run.
        for cancel in &sent.cancels {
            cancel.cancel();
        }
    }
    runtime.stop();
    driven.with_context(|| format!("{}: the live run", policy.name()))?;
    let first = requests.first().map_or(0, |r| r.arrival);
    let span = tally.last.saturating_sub(first);
    let usage = Usage {
        span,
        workers: tally
            .cpu
            .iter()
            .map(|&c| match span {
                0 => 0.0,
                s => c as f64 / s as f64,
            })
            .collect(),
        // The dispatchers' busy time is not measured live.
        dispatchers: Vec::new(),
    };
    let rate = setup.rate().unwrap_or_else(|| match requests.last() {
        Some(l) if l.arrival > first => {
            requests.len() as f64 * SEC as f64 / (l.arrival - first) as f64
        }
        _ => 0.0,
    });
    Ok(Replayed {
        summary: tally.collector.finish(&functions, usage),
        rate,
        late: Lateness::of(sent.late),
        cpu_over_work: (tally.used.1 > 0).then(|| tally.used.0 as f64 / tally.used.1 as f64),
    })
}

/// What the driver keeps of the requests it sent.
struct Sent {
    /// Each request's flag, to cancel what is left when the run stops
    /// early.
    cancels: Vec<Cancel>,
    /// How late each was sent, ns.
    late: Vec<Nanos>,
}

/// Sends each request to `runtime` at its arrival and hands every answer
/// to `fold` as it comes, until all are answered; stops at Ctrl-C, at
/// `fold`'s error, or when no answer has come for [`STALL`].
fn drive(
    runtime: &Runtime<WasmExecutor>,
    requests: &[Request],
    sent: &mut Sent,
    fold: &mut dyn FnMut(usize, Answer) -> Result<()>,
) -> Result<()> {
    let (tx, rx) = mpsc::channel::<(usize, Answer)>();
    let start = Instant::now() + LEAD;
    for (i, r) in requests.iter().enumerate() {
        let due = start + Duration::from_nanos(r.arrival);
        loop {
            while let Ok((i, answer)) = rx.try_recv() {
                fold(i, answer)?;
            }
            interrupt::check()?;
            let now = Instant::now();
            if now >= due {
                sent.late.push(now.duration_since(due).as_nanos() as Nanos);
                break;
            }
            std::thread::sleep((due - now).min(TICK));
        }
        let tx = tx.clone();
        let cancel = Cancel::new();
        sent.cancels.push(cancel.clone());
        runtime.submit(
            Invoke {
                function: "spin".into(),
                query: Some(format!("us={}", spin_us(r.work))),
                label: Some(r.function.name.to_string()),
                deadline: Some(r.deadline),
                received: due,
                cancel,
            },
            Box::new(move |answer| {
                let _ = tx.send((i, answer));
            }),
        );
    }
    drop(tx);
    let mut answered = Instant::now();
    loop {
        match rx.recv_timeout(TICK) {
            Ok((i, answer)) => {
                fold(i, answer)?;
                answered = Instant::now();
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                interrupt::check()?;
                if answered.elapsed() > STALL {
                    bail!(
                        "{} requests unanswered {} s after the last answer",
                        runtime.in_flight(),
                        STALL.as_secs()
                    );
                }
            }
        }
    }
}

/// What a replay keeps of its outcomes as they come.
struct Tally {
    collector: Collector,
    /// The work of the requests each worker finished, numbered across the
    /// node.
    cpu: Vec<Nanos>,
    /// Workers per dispatcher.
    workers: usize,
    /// The last finish.
    last: Nanos,
    /// Over the finished requests: the CPU their sandboxes used, and the
    /// work they asked for.
    used: (u128, u128),
}

impl Tally {
    fn record(&mut self, o: &RequestOutcome) {
        if let (Some(finish), Some(w)) = (o.finish, o.worker) {
            self.last = self.last.max(finish);
            self.cpu[o.dispatcher as usize * self.workers + w.0 as usize] += o.work;
        }
        self.collector.record(o);
    }
}

/// What became of `r` by its live answer, on the run's clock (its arrival
/// is when it was due): a refusal is a drop, as the simulator's; any other
/// failure is the run's error.
fn outcome(r: &Request, answer: Answer) -> Result<RequestOutcome, Failure> {
    let info = RequestInfo {
        id: r.id,
        function: r.function.id,
        arrival: r.arrival,
        deadline: r.deadline,
        estimate: r.estimate,
    };
    Ok(match answer {
        Ok(done) => RequestOutcome {
            info,
            work: r.work,
            dispatcher: done.dispatcher,
            worker: Some(WorkerId(done.worker)),
            first_run: Some(r.arrival + done.started),
            finish: Some(r.arrival + done.runtime),
            preemptions: done.preemptions,
        },
        Err(Failure::Overloaded) => RequestOutcome {
            info,
            work: r.work,
            dispatcher: 0,
            worker: None,
            first_run: None,
            finish: None,
            preemptions: 0,
        },
        Err(failure) => return Err(failure),
    })
}

/// `node replay`: the sweep replayed live, published as `node simulate`
/// publishes its own. `--costs` is refused: it sets what the simulator
/// charges, and a live node pays its own.
pub fn replay_sweep(
    options: &NodeOptions,
    costs_given: bool,
    sweep: &Sweep,
    host: Host,
    outputs: &Outputs,
) -> Result<()> {
    if costs_given {
        bail!("--costs sets what the simulator charges; a live node pays its own");
    }
    let host = measured_spin(host)?;
    let mut summary = sweep.run(options, &mut |setup, policy, bar| {
        replayed(setup, policy, &host, bar)
    })?;
    live_settings(&mut summary.settings, &host);
    outputs.publish(&summary, "faasched node replay", Staged::new())
}

/// `host` with `spin` measured once for every policy's run, said on
/// stderr.
pub fn measured_spin(host: Host) -> Result<Host> {
    let host = host.with_spin_measured()?;
    if let Some(steps) = host.spin_steps_per_ms {
        eprintln!("spin: {steps} steps per ms of CPU, the same for every policy");
    }
    Ok(host)
}

/// `policy` replayed live with a progress bar; says on stderr how late the
/// requests were sent.
pub fn replayed(
    setup: &NodeSetup,
    policy: &NodePolicy,
    host: &Host,
    bar: &ProgressBar,
) -> Result<(PolicySummary, f64)> {
    let r = replay(setup, policy, host, |_| bar.inc(1))?;
    bar.suspend(|| {
        eprintln!(
            "{}: requests sent late by p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs; \
             sandboxes used {} of the work asked",
            policy.name(),
            r.late.p50 as f64 / 1e3,
            r.late.p99 as f64 / 1e3,
            r.late.max as f64 / 1e3,
            r.cpu_over_work
                .map_or_else(|| "none".to_string(), |x| format!("{:.1}%", x * 100.0))
        )
    });
    Ok((r.summary, r.rate))
}

/// What summary.json records of a live run: the host instead of the
/// simulator's costs.
pub fn live_settings(settings: &mut Value, host: &Host) {
    if let Some(map) = settings.as_object_mut() {
        map.remove("costs");
    }
    settings["live"] = json!({
        "cpus": host.cpus,
        "poll": host.poll,
        "cpu_limit_ns": host.cpu_limit,
        "memory_limit_bytes": host.memory_limit,
        "max_sandboxes": host.max_sandboxes,
        "spin_steps_per_ms": host.spin_steps_per_ms,
        "online_cpus": faasched_sys::sched::online_cpus(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_reads_its_percentiles_off_the_sorted_delays() {
        let l = Lateness::of((1..=100).rev().collect());
        assert_eq!((l.p50, l.p99, l.max), (51, 99, 100));
        assert_eq!(Lateness::of(Vec::new()), Lateness::default());
    }

    #[test]
    fn spin_rounds_to_whole_microseconds_and_never_to_zero() {
        assert_eq!(spin_us(26 * US), 26);
        assert_eq!(spin_us(26 * US + 499), 26);
        assert_eq!(spin_us(26 * US + 500), 27);
        assert_eq!(spin_us(1), 1);
    }
}
