//! The live node's mechanisms timed one by one, as the node simulator
//! charges them (`faasched_sim::node::Costs`): what `faasched node
//! calibrate` measures.
//!
//! Each function times the runtime's own code, not a model of it: a
//! dispatcher's group ([`Group`]) placing a request or handing a held one to
//! an idle worker, a worker re-picking after a preemption, a sandbox's flag
//! and fiber switch, a worker parked and unparked as the runtime's are. Each
//! returns its samples, ns; the caller keeps their median ([`median`]),
//! which a noisy shared machine moves far less than a mean.
//!
//! A sample too short to time alone (a decision, a flag) is a batch divided
//! by its size, or one timing less the clock's own cost ([`clock_cost`]).

use super::invoke::{Cancel, Invoke};
use super::runtime::group::{After, Estimator, Group, Next, Ran};
use super::runtime::{Finished, Ticket};
use faasched_model::node::{
    Decision, Dispatch, Local, RequestId, RequestInfo, RequestOutcome, WorkerId, Workers,
};
use faasched_model::{MS, Nanos, SEC, Time};
use faasched_wasm::{Fault, Preempt, Sandbox, Step};
use faasched_workload::node::Deadline;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// Calls per timed batch of [`preempt_signals`].
const SIGNALS: usize = 256;

/// How long a woken worker or a stopped sandbox may take before a
/// measurement gives up: far beyond any latency, short of a hang.
const CAP: Duration = Duration::from_secs(10);

/// How long a guest spins before [`preempt_latencies`] asks it to stop, so
/// that it is deep in its loop and on its core, not starting up.
const SPIN_BEFORE_ASK: Duration = Duration::from_micros(20);

/// How long [`wakes`] lets a worker fall asleep before waking it: far more
/// than parking takes, so that it is in its futex wait.
const FALL_ASLEEP: Duration = Duration::from_micros(200);

/// A `spin` that runs far longer than any measurement keeps it running.
const LONG_SPIN: i64 = i64::MAX / 4;

/// A spinning sandbox with at least half its CPU limit left: `sandbox`, or
/// a fresh one in its place once it has used more (a long measurement on a
/// busy machine, where the guest spins while the measuring thread waits
/// for a core, would otherwise reach the limit).
fn spinning<'s>(
    runtime: &faasched_wasm::Runtime,
    preempt: &Preempt,
    sandbox: &'s mut Option<Sandbox>,
) -> Result<&'s mut Sandbox, Fault> {
    if sandbox
        .as_ref()
        .is_none_or(|s| s.stats().cpu > runtime.cpu_limit() / 2)
    {
        *sandbox = None;
        *sandbox = Some(Sandbox::start(runtime, preempt, "spin", LONG_SPIN)?);
    }
    Ok(sandbox.as_mut().expect("set above"))
}

/// Why a measurement stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrateError {
    /// A sandbox could not start or ended early.
    #[error("sandbox: {0}")]
    Sandbox(#[from] Fault),
    /// A sandbox ran to its end where it should have stopped at a check.
    #[error("the spinning sandbox finished instead of stopping at its check")]
    Finished,
    /// A thread the measurement relies on did not answer within the cap.
    #[error("{0} did not answer within {CAP:?}")]
    Stalled(&'static str),
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(#[from] std::io::Error),
    /// The group did not do what the measurement set it up to do.
    #[error("the runtime's group {0}")]
    Group(&'static str),
}

/// The median of `v` (the upper one of an even count); 0 if empty.
pub fn median(mut v: Vec<Nanos>) -> Nanos {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn since(t: Instant) -> Nanos {
    t.elapsed().as_nanos() as Nanos
}

/// What two clock reads back to back take, ns (median of `samples`): the
/// cost one timing adds to what it times.
pub fn clock_cost(samples: usize) -> Nanos {
    median(
        (0..samples.max(1))
            .map(|_| since(std::hint::black_box(Instant::now())))
            .collect(),
    )
}

/// A no-op request nobody waits for.
fn request() -> (Arc<Invoke>, Ticket) {
    let invoke = Invoke {
        function: "noop".into(),
        query: None,
        headers: Default::default(),
        body: Default::default(),
        label: None,
        deadline: None,
        received: Instant::now(),
        cancel: Cancel::new(),
    };
    (Arc::new(invoke), Ticket::new(Box::new(|_| {})))
}

/// A policy that counts the workers its decisions examined and the held
/// requests it handed to idle workers.
struct Counting {
    policy: Box<dyn Dispatch + Send>,
    scanned: Arc<AtomicU64>,
    handed: Arc<AtomicU64>,
}

impl Counting {
    fn new(policy: Box<dyn Dispatch + Send>) -> Counting {
        Counting {
            policy,
            scanned: Arc::default(),
            handed: Arc::default(),
        }
    }
}

impl Dispatch for Counting {
    fn name(&self) -> &str {
        self.policy.name()
    }

    fn local(&self) -> Local {
        self.policy.local()
    }

    fn on_request(&mut self, now: Time, req: &RequestInfo, workers: &Workers) -> Decision {
        let decision = self.policy.on_request(now, req, workers);
        self.scanned
            .fetch_add(u64::from(decision.scanned), Ordering::Relaxed);
        decision
    }

    fn on_idle(&mut self, now: Time, w: WorkerId, workers: &Workers, out: &mut Vec<RequestId>) {
        let before = out.len();
        self.policy.on_idle(now, w, workers, out);
        self.handed
            .fetch_add((out.len() - before) as u64, Ordering::Relaxed);
    }

    fn quantum(&self) -> Option<Nanos> {
        self.policy.quantum()
    }

    fn on_quantum(&mut self, now: Time, w: WorkerId, workers: &Workers, out: &mut Vec<RequestId>) {
        self.policy.on_quantum(now, w, workers, out);
    }

    fn on_returned(&mut self, now: Time, req: &RequestInfo, w: WorkerId) -> Option<WorkerId> {
        self.policy.on_returned(now, req, w)
    }

    fn on_finish(&mut self, now: Time, outcome: &RequestOutcome) {
        self.policy.on_finish(now, outcome);
    }
}

/// A group's requests: each arrival's id, and what each worker runs.
struct Driven {
    group: Mutex<Group<()>>,
    running: Vec<Option<RequestId>>,
    next_id: u64,
    now: Time,
}

impl Driven {
    fn new(policy: Box<dyn Dispatch + Send>, workers: usize) -> Driven {
        Driven {
            group: Mutex::new(Group::new(
                0,
                policy,
                workers,
                Estimator {
                    recent: None,
                    always: false,
                    first: MS,
                },
                &[],
            )),
            running: vec![None; workers],
            next_id: 0,
            now: 0,
        }
    }

    fn group(&self) -> std::sync::MutexGuard<'_, Group<()>> {
        self.group.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request estimated at `estimate`, due `deadline` after now; the
    /// clock moves a ns, so that later arrivals are due later.
    fn arrive(&mut self, deadline: Nanos, estimate: Nanos) {
        let (invoke, ticket) = request();
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.now += 1;
        let now = self.now;
        drop(self.group().arrive(
            now,
            id,
            Deadline::Absolute(deadline),
            Some(estimate),
            invoke,
            ticket,
        ));
    }

    /// Worker `w` asks for its next request; what it starts, if anything.
    fn next(&mut self, w: usize) -> Option<RequestId> {
        let (next, _) = self.group().next(WorkerId(w as u32), self.now);
        let id = match next {
            Next::Start { id, .. } | Next::Resume { id, .. } => Some(id),
            Next::Idle => None,
        };
        self.running[w] = id;
        id
    }

    /// Worker `w`'s request finishes.
    fn end(&mut self, w: usize) {
        if let Some(id) = self.running[w].take() {
            let ran = Ran::Done(Ok(Finished {
                value: 0,
                written: None,
                cpu: 0,
                cold: false,
            }));
            drop(self.group().ran(WorkerId(w as u32), id, self.now, ran));
        }
    }

    /// Worker `w`'s request finishes; it starts its next, if any.
    fn finish(&mut self, w: usize) {
        self.end(w);
        self.next(w);
    }
}

/// What a decision of `policy` costs the live dispatcher on a group of
/// `workers` workers that each run a request and queue `queued` more: the
/// group's lock, the clock read, [`Group::arrive`] (the policy's
/// `on_request`, the request's bookkeeping, its queueing). Each sample is
/// a batch of as many arrivals as workers, less the clock's cost, ns per
/// decision; after each, every worker finishes a request, so the queues
/// keep their length whatever the group's size (SledgeScale's scan reads
/// each queue). Also the workers each decision examined, on average
/// (`Decision::scanned`).
///
/// Requests are estimated at 1 ms and due 10 ms after they arrive (10 ×,
/// as SledgeScale's), each a ns after the last, so none preempts another.
pub fn decisions(
    policy: Box<dyn Dispatch + Send>,
    workers: usize,
    queued: usize,
    samples: usize,
    clock: Nanos,
) -> (Vec<Nanos>, f64) {
    let counting = Counting::new(policy);
    let scanned = counting.scanned.clone();
    let mut d = Driven::new(Box::new(counting), workers);
    for _ in 0..workers * (queued + 1) {
        d.arrive(10 * MS, MS);
    }
    for w in 0..workers {
        d.next(w);
    }
    let batch = workers;
    // The policy's clock goes on from the priming's, on the wall clock.
    let (start, from) = (Instant::now(), d.now);
    let base = scanned.load(Ordering::Relaxed);
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let mut requests: Vec<_> = (0..batch).map(|_| request()).collect();
        let t = Instant::now();
        for (invoke, ticket) in requests.drain(..) {
            let id = RequestId(d.next_id);
            d.next_id += 1;
            let now = from + since(start);
            d.now = now;
            drop(d.group().arrive(
                now,
                id,
                Deadline::Absolute(10 * MS),
                Some(MS),
                invoke,
                ticket,
            ));
        }
        times.push(since(t).saturating_sub(clock) / batch as Nanos);
        for w in 0..workers {
            d.finish(w);
        }
    }
    let decided = (samples * batch).max(1) as f64;
    let examined = (scanned.load(Ordering::Relaxed) - base) as f64 / decided;
    (times, examined)
}

/// What handing a held request to an idle worker costs: [`Group::next`]
/// of a worker with an empty queue while `policy` (a late-binding one:
/// Shinjuku, Sledge) holds requests: its `on_idle`, the hand-over, and the
/// worker taking the request. Each sample is one hand-over less the
/// clock's cost.
pub fn idle_pulls(
    policy: Box<dyn Dispatch + Send>,
    samples: usize,
    clock: Nanos,
) -> Result<Vec<Nanos>, CalibrateError> {
    let counting = Counting::new(policy);
    let handed = counting.handed.clone();
    let mut d = Driven::new(Box::new(counting), 1);
    for _ in 0..samples {
        d.arrive(10 * MS, MS);
    }
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let before = handed.load(Ordering::Relaxed);
        let t = Instant::now();
        let started = d.next(0);
        let took = since(t);
        if started.is_none() || handed.load(Ordering::Relaxed) == before {
            return Err(CalibrateError::Group(
                "handed an idle worker nothing (the policy holds no request)",
            ));
        }
        times.push(took.saturating_sub(clock));
        d.end(0);
    }
    Ok(times)
}

/// What a worker does under the group's lock when its sandbox stops for a
/// local quantum's re-pick, ns each, less the clock's cost.
#[derive(Clone, Debug, Default)]
pub struct Repicks {
    /// The running request stays first and goes on: [`Group::ran`]
    /// answers it to continue.
    pub kept: Vec<Nanos>,
    /// A queued request comes first: [`Group::ran`] puts the stopped one
    /// back in the queue and [`Group::next`] starts the other.
    pub switched: Vec<Nanos>,
}

/// Times the group's side of `samples` re-picks of each kind under
/// `policy`, which must have a local quantum of at most a second and never
/// preempt by itself (`rr`): on one worker, a request runs, another
/// arrives, the dispatcher's tick asks the worker to re-pick, and the
/// worker's report of its stopped sandbox is timed.
pub fn repicks(
    policy: Box<dyn Dispatch + Send>,
    samples: usize,
    clock: Nanos,
) -> Result<Repicks, CalibrateError> {
    let mut out = Repicks::default();
    let mut d = Driven::new(policy, 1);
    for switch in [false, true] {
        for _ in 0..samples {
            // The first request runs; the second is due before it when the
            // worker is to switch, after it when it is to go on.
            let (first, second) = if switch { (SEC, MS) } else { (MS, SEC) };
            d.arrive(first, MS);
            let Some(running) = d.next(0) else {
                return Err(CalibrateError::Group("did not start a queued request"));
            };
            d.arrive(second, MS);
            d.now += 2 * SEC;
            drop(d.group().on_tick(d.now));
            let t = Instant::now();
            let (after, _) = d.group().ran(WorkerId(0), running, d.now, Ran::Stopped(()));
            let took = match after {
                After::Continue(()) if !switch => since(t),
                After::Next if switch => {
                    let started = d.next(0);
                    let took = since(t);
                    if started.is_none() {
                        return Err(CalibrateError::Group("started nothing after a re-pick"));
                    }
                    took
                }
                _ => return Err(CalibrateError::Group("re-picked otherwise than set up")),
            };
            match switch {
                true => out.switched.push(took.saturating_sub(clock)),
                false => out.kept.push(took.saturating_sub(clock)),
            }
            // Both end, the one running first.
            d.finish(0);
            d.finish(0);
        }
    }
    Ok(out)
}

/// What the dispatcher's side of a preemption costs: [`Preempt::request`]
/// (the worker's flag and an epoch bump), ns per call, each sample a batch
/// of [`SIGNALS`] calls.
pub fn preempt_signals(preempt: &Preempt, samples: usize) -> Vec<Nanos> {
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..SIGNALS {
                preempt.request();
            }
            since(t) / SIGNALS as Nanos
        })
        .collect()
}

/// A sandbox's stop and resume on one thread: with its flag set, each
/// [`Sandbox::resume`] switches to the guest's fiber, the guest reaches its
/// next check, sees the flag and yields back. That is one context restored
/// and one saved, ns each, less the clock's cost.
pub fn fiber_switches(
    runtime: &faasched_wasm::Runtime,
    samples: usize,
    clock: Nanos,
) -> Result<Vec<Nanos>, CalibrateError> {
    let preempt = runtime.preempt();
    let mut sandbox = None;
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let sandbox = spinning(runtime, &preempt, &mut sandbox)?;
        preempt.request();
        let t = Instant::now();
        let step = sandbox.resume();
        let took = since(t);
        match step {
            Step::Preempted => times.push(took.saturating_sub(clock)),
            Step::Done(Err(fault)) => return Err(fault.into()),
            Step::Done(Ok(_)) => return Err(CalibrateError::Finished),
        }
    }
    Ok(times)
}

/// From the dispatcher's ask ([`Preempt::request`], on this thread) to a
/// sandbox spinning on another thread having stopped at its check and
/// yielded ([`Sandbox::resume`] returned on that thread), ns each: the
/// flag's and the epoch's way to the other core, the guest's next check,
/// its yield.
pub fn preempt_latencies(
    runtime: &faasched_wasm::Runtime,
    samples: usize,
) -> Result<Vec<Nanos>, CalibrateError> {
    let preempt = runtime.preempt();
    let base = Instant::now();
    let resuming = AtomicBool::new(false);
    let (go, went) = mpsc::channel::<()>();
    let (stopped, stops) = mpsc::channel::<Result<Nanos, CalibrateError>>();
    thread::scope(|s| {
        let worker = {
            let preempt = preempt.clone();
            let resuming = &resuming;
            thread::Builder::new()
                .name("calibrate-worker".into())
                .spawn_scoped(s, move || {
                    let mut held = None;
                    let started = spinning(runtime, &preempt, &mut held).map(|_| 0);
                    if stopped.send(started.map_err(Into::into)).is_err() {
                        return;
                    }
                    while went.recv().is_ok() {
                        let sandbox = match spinning(runtime, &preempt, &mut held) {
                            Ok(sandbox) => sandbox,
                            Err(e) => {
                                let _ = stopped.send(Err(e.into()));
                                return;
                            }
                        };
                        resuming.store(true, Ordering::Release);
                        let step = sandbox.resume();
                        let at = since(base);
                        let sent = match step {
                            Step::Preempted => stopped.send(Ok(at)),
                            Step::Done(Err(fault)) => {
                                // Ended (a CPU limit reached while this
                                // thread waited for a core): the next
                                // sample starts a fresh one.
                                held = None;
                                stopped.send(Err(fault.into()))
                            }
                            Step::Done(Ok(_)) => stopped.send(Err(CalibrateError::Finished)),
                        };
                        if sent.is_err() {
                            return;
                        }
                    }
                })?
        };
        let measured = (|| {
            // The worker's sandbox started, or why not.
            stops
                .recv_timeout(CAP)
                .map_err(|_| CalibrateError::Stalled("the worker thread"))??;
            let mut times = Vec::with_capacity(samples);
            // Samples lost to a sandbox that reached its CPU limit, taken
            // again (as many as asked for at most).
            let mut retries = samples;
            while times.len() < samples {
                resuming.store(false, Ordering::Release);
                go.send(())
                    .map_err(|_| CalibrateError::Stalled("the worker thread"))?;
                let asked = Instant::now();
                while !resuming.load(Ordering::Acquire) {
                    if asked.elapsed() > CAP {
                        return Err(CalibrateError::Stalled("the worker thread"));
                    }
                    std::hint::spin_loop();
                }
                let running = Instant::now();
                while running.elapsed() < SPIN_BEFORE_ASK {
                    std::hint::spin_loop();
                }
                let ask = since(base);
                preempt.request();
                match stops
                    .recv_timeout(CAP)
                    .map_err(|_| CalibrateError::Stalled("the stopping sandbox"))?
                {
                    Ok(at) => times.push(at.saturating_sub(ask)),
                    Err(CalibrateError::Sandbox(Fault::Timeout { .. })) if retries > 0 => {
                        retries -= 1;
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(times)
        })();
        drop(go);
        let _ = worker.join();
        measured
    })
}

/// How an idle worker waits for work, as the runtime's do
/// (`RuntimeConfig::poll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// Asleep in [`thread::park`] (a futex wait), woken by
    /// [`thread::Thread::unpark`].
    Park,
    /// Spinning on its flag.
    Spin,
}

/// From work handed to an idle worker to that worker running, ns each:
/// the runtime's hand-off (a flag stored, then [`thread::Thread::unpark`])
/// to a worker waiting as `idle` says. A parked worker is given time to
/// fall asleep first.
pub fn wakes(samples: usize, idle: Idle) -> Result<Vec<Nanos>, CalibrateError> {
    let base = Instant::now();
    let woken = AtomicBool::new(false);
    let asleep = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let ran = AtomicU64::new(0);
    thread::scope(|s| {
        let worker = thread::Builder::new()
            .name("calibrate-sleeper".into())
            .spawn_scoped(s, || {
                while !stop.load(Ordering::Acquire) {
                    asleep.store(true, Ordering::Release);
                    while !woken.swap(false, Ordering::AcqRel) {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        match idle {
                            Idle::Park => thread::park(),
                            Idle::Spin => std::hint::spin_loop(),
                        }
                    }
                    ran.store(since(base).max(1), Ordering::Release);
                }
            })?;
        let measured = (|| {
            let mut times = Vec::with_capacity(samples);
            for _ in 0..samples {
                let waited = Instant::now();
                while !asleep.swap(false, Ordering::AcqRel) {
                    if waited.elapsed() > CAP {
                        return Err(CalibrateError::Stalled("the sleeping worker"));
                    }
                    thread::yield_now();
                }
                if idle == Idle::Park {
                    thread::sleep(FALL_ASLEEP);
                }
                ran.store(0, Ordering::Release);
                let handed = since(base);
                woken.store(true, Ordering::Release);
                worker.thread().unpark();
                let waited = Instant::now();
                let at = loop {
                    match ran.load(Ordering::Acquire) {
                        0 if waited.elapsed() > CAP => {
                            return Err(CalibrateError::Stalled("the woken worker"));
                        }
                        0 => std::hint::spin_loop(),
                        at => break at,
                    }
                };
                times.push(at.saturating_sub(handed));
            }
            Ok(times)
        })();
        stop.store(true, Ordering::Release);
        worker.thread().unpark();
        let _ = worker.join();
        measured
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_policy::node::{
        PreemptTest, Queues, Resume, RoundRobin, Scan, Shinjuku, SledgeScale,
    };

    fn sledgescale() -> Box<dyn Dispatch + Send> {
        Box::new(SledgeScale::new(Scan::Paper, PreemptTest::Paper))
    }

    #[test]
    fn a_decision_over_busy_workers_scans_them_all_and_keeps_the_queues() {
        let (times, scanned) = decisions(sledgescale(), 4, 2, 5, 0);
        assert_eq!(times.len(), 5);
        assert_eq!(scanned, 4.0);
        let (_, one) = decisions(sledgescale(), 1, 2, 3, 0);
        assert_eq!(one, 1.0);
    }

    #[test]
    fn every_hand_over_of_a_held_request_is_timed() {
        let shinjuku = Box::new(Shinjuku::new(Queues::Single, Resume::SameWorker));
        assert_eq!(idle_pulls(shinjuku, 20, 0).unwrap().len(), 20);
        let rr = Box::new(RoundRobin::new());
        let err = idle_pulls(rr, 3, 0).unwrap_err();
        assert!(matches!(err, CalibrateError::Group(_)), "{err}");
    }

    #[test]
    fn a_repick_either_keeps_the_request_or_switches_to_the_earlier_one() {
        let r = repicks(Box::new(RoundRobin::new()), 10, 0).unwrap();
        assert_eq!((r.kept.len(), r.switched.len()), (10, 10));
    }

    #[test]
    fn a_sandbox_stops_at_its_check_on_this_thread_and_on_another() {
        let mut config = faasched_wasm::Config::new();
        config.max_sandboxes(4).spin_steps_per_ms(1_000);
        let runtime = faasched_wasm::Runtime::new(&config).unwrap();
        assert_eq!(fiber_switches(&runtime, 10, 0).unwrap().len(), 10);
        assert_eq!(preempt_latencies(&runtime, 5).unwrap().len(), 5);
        assert_eq!(preempt_signals(&runtime.preempt(), 3).len(), 3);
    }

    #[test]
    fn a_spinning_sandbox_near_its_cpu_limit_is_replaced() {
        // 6,000 asks each follow at least 20 µs of spin: beyond the limit.
        let mut config = faasched_wasm::Config::new();
        config
            .max_sandboxes(4)
            .spin_steps_per_ms(1_000)
            .cpu_limit(100 * MS);
        let runtime = faasched_wasm::Runtime::new(&config).unwrap();
        assert_eq!(preempt_latencies(&runtime, 6_000).unwrap().len(), 6_000);
    }

    #[test]
    fn an_idle_worker_is_woken_every_time() {
        assert_eq!(wakes(5, Idle::Park).unwrap().len(), 5);
        assert_eq!(wakes(5, Idle::Spin).unwrap().len(), 5);
    }

    #[test]
    fn the_median_is_the_upper_middle() {
        assert_eq!(median(vec![5, 1, 3, 2]), 3);
        assert_eq!(median(Vec::new()), 0);
    }
}
