//! A node run, live: the requests `node simulate` would run, sent to a real
//! node runtime (WebAssembly sandboxes on worker threads) at their arrival
//! times, and summarised as the simulation is.
//!
//! The [load driver](faasched_live::load)'s open loop hands each request
//! to the runtime in process ([`InProcess`]: no transport; the HTTP
//! ingress's cost is measured apart, in `faasched bench runtime`) when it
//! is due, its thread asleep in between ([`Pacing::Sleep`]): a request is
//! received when it was due, so a driver that wakes late delays its
//! latency, never its schedule (no coordinated omission). The runtime
//! reports when each request first ran and finished; the outcomes go to
//! the same [`Collector`] as the simulator's. A request is `spin` of its
//! work, or the real function its workload function is given ([`Calls`]).

use super::catalog::NodePolicy;
use super::deploy::{self, Deployed};
use super::live::Host;
use super::run::{NodeOptions, NodeSetup};
use super::sweep::Sweep;
use crate::calls::CallOptions;
use crate::interrupt;
use crate::os::replay::busy_warning;
use crate::output::Outputs;
use anyhow::{Context, Result, bail};
use faasched_live::load::{self, End, Failure, InProcess, Lateness, LoadConfig, Mode, Pacing};
use faasched_live::node::invoke::{self, Completed};
use faasched_live::node::load::{Calls, NodeCall, Record, spin_us};
use faasched_live::node::runtime::RuntimeConfig;
use faasched_live::os::observe::OtherWork;
use faasched_model::node::{Request, RequestOutcome};
use faasched_model::{Nanos, SEC};
use faasched_report::Staged;
use faasched_report::node::{Collector, PolicySummary, Usage};
use faasched_sim::node::{Assign, Estimate as Estimator};
use faasched_workload::node::Estimate;
use indicatif::ProgressBar;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// How long the run waits, after its last arrival, for the answers still
/// out before it gives up on them: longer than any request of a sane run
/// takes.
const DRAIN: Nanos = 60 * SEC;

/// What a replay measured.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The summary, as a simulation's.
    pub summary: PolicySummary,
    /// The offered rate.
    pub rate: f64,
    /// How late the requests were sent.
    pub late: Lateness,
    /// The CPU time the finished `spin` requests' sandboxes used over the
    /// work they asked for (a real function's is not the work its request
    /// stands for): above 1, the machine ran the workload at a higher
    /// load than it asks (a calibrated spin slowed by a busy sibling
    /// hyperthread, the sandbox's own set-up).
    pub cpu_over_work: Option<f64>,
}

/// Runs `policy` live on `host`, serving `deployed` beside the built-ins,
/// over the setup's requests, each sent as `calls` says, and summarises
/// it as [`NodeSetup::run`] does, calling
/// `answered` (on the runtime's threads) as each answer comes. The run
/// stops at the first failure other than a refusal (a refusal is a drop,
/// as the simulator's).
pub fn replay(
    setup: &NodeSetup,
    policy: &NodePolicy,
    host: &Host,
    calls: &Calls,
    deployed: &[Deployed],
    answered: impl Fn() + Send + Sync + 'static,
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
    for d in deployed {
        runtime
            .register_function(&d.name, &d.module, &d.settings)
            .map_err(|f| anyhow::anyhow!("{}: {f}", d.manifest.display()))?;
    }
    // The first failure but a refusal, told as it came; it ends the run.
    let failed: std::sync::Arc<Mutex<Option<String>>> = Default::default();
    let first_failure = failed.clone();
    let each = move |call: &NodeCall, answer: &invoke::Answer| {
        answered();
        if let Err(failure) = answer
            && *failure != invoke::Failure::Overloaded
        {
            first_failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert_with(|| failed_live(call, failure));
        }
    };
    let stop = || {
        interrupt::requested()
            || failed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some()
    };
    let (first, last) = match (requests.first(), requests.last()) {
        (Some(f), Some(l)) => (f.arrival, l.arrival),
        _ => (0, 0),
    };
    let count = requests.len();
    let load = LoadConfig {
        drain: DRAIN,
        timeout: DRAIN,
        // The connections an in-process run has none of.
        ..LoadConfig::new(Mode::Open { connections: 1 }, last + 1)
    };
    let calls = calls.clone();
    let sent = requests.into_iter().map(move |request| {
        let send = request.arrival;
        NodeCall::new(request, send, &calls)
    });
    let run = load::open(
        &load,
        InProcess::new(&runtime, each),
        sent,
        Pacing::Sleep,
        &stop,
    );
    runtime.stop();
    let run = run.with_context(|| format!("{}: the live run", policy.name()))?;
    // A signal first: stopping cancels the queued requests, whose answers
    // (the client left) are its doing, not the run's failure.
    interrupt::check()?;
    if let Some(failure) = failed.lock().unwrap_or_else(PoisonError::into_inner).take() {
        bail!("{}: {failure}", policy.name());
    }
    match run.end {
        // Stopped early by a signal or a failure, told above.
        End::Completed | End::Interrupted => {}
        End::DrainTimeout => bail!(
            "{}: {} requests unanswered {} s after the last arrival",
            policy.name(),
            run.records
                .iter()
                .filter(|r| matches!(r.failure, Some(Failure::Unfinished | Failure::Unsent)))
                .count(),
            DRAIN / SEC
        ),
    }
    let mut tally = Tally {
        collector: Collector::new(policy.name()),
        cpu: vec![0; setup.config.dispatchers * setup.config.workers],
        workers: setup.config.workers,
        last: 0,
        used: (0, 0),
    };
    for record in &run.records {
        let outcome = outcome(record).with_context(|| policy.name().to_string())?;
        // A real function's CPU time is not the work it stands for.
        let spun = record
            .completed
            .as_ref()
            .filter(|_| record.call.call.is_none());
        tally.record(&outcome, spun);
    }
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
    let rate = setup.rate().unwrap_or_else(|| {
        if last > first {
            count as f64 * SEC as f64 / (last - first) as f64
        } else {
            0.0
        }
    });
    Ok(Replayed {
        summary: tally.collector.finish(&functions, usage),
        rate,
        late: run.lateness(),
        cpu_over_work: (tally.used.1 > 0).then(|| tally.used.0 as f64 / tally.used.1 as f64),
    })
}

/// What a replay keeps of its outcomes: the simulator's [`Collector`], and
/// what a live run measures besides.
struct Tally {
    collector: Collector,
    /// The work of the requests each worker finished, numbered across the
    /// node.
    cpu: Vec<Nanos>,
    /// Workers per dispatcher.
    workers: usize,
    /// The last finish.
    last: Nanos,
    /// Over the finished `spin` requests: the CPU their sandboxes used,
    /// and the work they asked for.
    used: (u128, u128),
}

impl Tally {
    fn record(&mut self, o: &RequestOutcome, completed: Option<&Completed>) {
        if let (Some(finish), Some(w)) = (o.finish, o.worker) {
            self.last = self.last.max(finish);
            self.cpu[o.dispatcher as usize * self.workers + w.0 as usize] += o.work;
        }
        if let Some(done) = completed {
            self.used.0 += u128::from(done.cpu);
            self.used.1 += u128::from(o.work);
        }
        self.collector.record(o);
    }
}

/// What became of a request by its record: a refusal is a drop, as the
/// simulator's; any other failure is the run's error.
fn outcome(record: &Record) -> Result<RequestOutcome> {
    match &record.failure {
        Some(Failure::Server { kind }) if kind == invoke::Failure::Overloaded.kind() => {}
        Some(failure) => bail!(failed_live(&record.call, failure)),
        None if record.completed.is_none() => bail!(failed_live(
            &record.call,
            "answered without the runtime's account"
        )),
        None => {}
    }
    Ok(record.outcome())
}

/// Why the run failed at `call`.
fn failed_live(call: &NodeCall, why: impl std::fmt::Display) -> String {
    let r = &call.request;
    let sent = match &call.call {
        Some(call) => format!("as {call}"),
        None => format!("{} µs", spin_us(r.work)),
    };
    format!(
        "request {} ({}, {sent}) failed live: {why}",
        r.id.0, r.function.name
    )
}

/// `node replay`: the sweep replayed live, each request sent as `calls`
/// says, published as `node simulate` publishes its own. `--costs` is
/// refused: it sets what the simulator charges, and a live node pays its
/// own.
pub fn replay_sweep(
    options: &NodeOptions,
    costs_given: bool,
    sweep: &Sweep,
    host: Host,
    calls: &CallOptions,
    deploy: Option<&Path>,
    outputs: &Outputs,
) -> Result<()> {
    if costs_given {
        bail!("--costs sets what the simulator charges; a live node pays its own");
    }
    let live = Live::prepare(options, host, calls, deploy)?;
    let mut summary = sweep.run(options, &mut |setup, policy, bar| {
        live.replayed(setup, policy, bar)
    })?;
    live_settings(&mut summary.settings, &live.host);
    outputs.publish(&summary, "faasched node replay", Staged::new())
}

/// What every policy's live run of a sweep shares: the host with `spin`
/// measured, what each workload function is sent as, and the deployed
/// functions, compiled once.
pub struct Live {
    /// The host, `spin` measured.
    pub host: Host,
    calls: Calls,
    deployed: Vec<Deployed>,
}

impl Live {
    /// Checks `calls` against the workload's functions, measures `spin`
    /// once for every policy (said on stderr) and compiles what `deploy`
    /// holds, in that order: a mistyped label fails before anything is
    /// measured or compiled.
    pub fn prepare(
        options: &NodeOptions,
        host: Host,
        calls: &CallOptions,
        deploy: Option<&Path>,
    ) -> Result<Live> {
        // Every rate's setup has the same functions.
        let calls = calls.calls(&options.setup(None)?.functions())?;
        let host = host.with_spin_measured()?;
        if let Some(steps) = host.spin_steps_per_ms {
            eprintln!("spin: {steps} steps per ms of CPU, the same for every policy");
        }
        // Compiled once here, loaded by every policy's node.
        let deployed = deploy::read_compiled(deploy, &host)?;
        Ok(Live {
            host,
            calls,
            deployed,
        })
    }

    /// `policy` replayed live with a progress bar; says on stderr how late
    /// the requests were sent.
    pub fn replayed(
        &self,
        setup: &NodeSetup,
        policy: &NodePolicy,
        bar: &ProgressBar,
    ) -> Result<(PolicySummary, f64)> {
        let progress = bar.clone();
        let other = OtherWork::start().ok();
        let r = replay(
            setup,
            policy,
            &self.host,
            &self.calls,
            &self.deployed,
            move || progress.inc(1),
        )?;
        let busy = other.and_then(|o| o.share().ok()).and_then(|share| {
            busy_warning(
                policy.name(),
                share,
                "this machine's CPUs' time (other processes, the kernel, the host's steal) \
                 while it ran live",
            )
        });
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
            );
            if let Some(warning) = &busy {
                eprintln!("{warning}");
            }
        });
        Ok((r.summary, r.rate))
    }
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
