//! The runtime's threads: a dispatcher per group, its workers, and the
//! [`Runtime`] handle that starts them, feeds them and stops them.

use super::group::{After, Effects, Group, GroupStats, Next, Ran, SWITCH_MAX};
use super::{Executor, Percentiles, Policies, RuntimeConfig, Step, Ticket};
use crate::node::invoke::{Failure, Invoke, Reply};
use crate::node::manifest::Settings;
use crate::sys;
use crate::wire::response;
use faasched_model::node::{Refusal, RequestId, WorkerId};
use faasched_model::{CpuSet, Time};
use faasched_workload::node::Deadline;
use serde_json::json;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// How long a worker with nothing to run sleeps at most while the runtime
/// stops and its group still has requests in flight on other workers.
const STOP_POLL: Duration = Duration::from_millis(5);

/// What a dispatcher's channel carries.
enum Msg {
    Request(Arc<Invoke>, Ticket),
    Stop,
}

/// One group: its state, and its workers' threads to wake.
struct Shared<J> {
    state: Mutex<Group<J>>,
    threads: Vec<OnceLock<Thread>>,
    /// Set when a worker is woken: what a polling worker spins on.
    woken: Vec<AtomicBool>,
    /// The runtime-wide number of the group's worker 0.
    base: usize,
}

impl<J> Shared<J> {
    fn lock(&self) -> MutexGuard<'_, Group<J>> {
        // A worker that panicked mid-update leaves the group as it was at
        // the panic; the others carry on with it rather than fail every
        // request after.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What every thread reads.
struct Common<E: Executor> {
    executor: Arc<E>,
    groups: Vec<Arc<Shared<E::Job>>>,
    config: RuntimeConfig,
    /// The deadlines registered functions' manifests gave, by name: after
    /// a request's own, before the configuration's, looked up by a
    /// request's label as `--deadline`'s are (its function's name unless
    /// it names another in `x-faasched-function`).
    registered: RwLock<HashMap<String, Deadline>>,
    /// Held by a registration or a removal from start to end, so that a
    /// function's deadline and its module come and go together.
    registering: Mutex<()>,
    start: Instant,
    ids: AtomicU64,
    stopping: AtomicBool,
}

impl<E: Executor> Common<E> {
    fn now(&self) -> Time {
        self.start.elapsed().as_nanos() as Time
    }

    /// The relative deadline of a request labelled `label` that names
    /// none: its function's registered one, else the configuration's.
    fn deadline(&self, label: &str) -> Deadline {
        let registered = self.registered.read().unwrap_or_else(|e| e.into_inner());
        match registered.get(label) {
            Some(&deadline) => deadline,
            None => self.config.deadline(label),
        }
    }

    /// Does what a group's critical section asked, outside its lock.
    fn apply(&self, g: &Shared<E::Job>, fx: Effects) {
        for w in fx.wake {
            g.woken[w.0 as usize].store(true, Ordering::Release);
            if let Some(t) = g.threads[w.0 as usize].get() {
                t.unpark();
            }
        }
        for w in fx.preempt {
            self.executor.preempt(g.base + w.0 as usize);
        }
        for (ticket, answer) in fx.replies {
            ticket.answer(answer);
        }
    }
}

/// A running node runtime: start it with [`Runtime::start`], feed it
/// through [`crate::node::invoke::Backend`], stop it with
/// [`Runtime::stop`] (or drop it).
pub struct Runtime<E: Executor> {
    common: Arc<Common<E>>,
    senders: Vec<mpsc::Sender<Msg>>,
    next: AtomicUsize,
    accepting: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl<E: Executor> Runtime<E> {
    /// Starts `config.dispatchers` dispatchers, one per policy of
    /// `policies`, each with `config.workers` workers, over `executor`.
    pub fn start(
        config: RuntimeConfig,
        policies: Policies,
        executor: Arc<E>,
    ) -> std::io::Result<Runtime<E>> {
        if policies.len() != config.dispatchers || config.dispatchers == 0 || config.workers == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} policies for {} dispatchers of {} workers: need one per dispatcher, and at least one of each",
                    policies.len(),
                    config.dispatchers,
                    config.workers
                ),
            ));
        }
        let groups: Vec<_> = policies
            .into_iter()
            .enumerate()
            .map(|(d, policy)| {
                Arc::new(Shared {
                    state: Mutex::new(Group::new(
                        d as u32,
                        policy,
                        config.workers,
                        config.estimator(),
                        &config.functions,
                    )),
                    threads: (0..config.workers).map(|_| OnceLock::new()).collect(),
                    woken: (0..config.workers)
                        .map(|_| AtomicBool::new(false))
                        .collect(),
                    base: d * config.workers,
                })
            })
            .collect();
        let common = Arc::new(Common {
            executor,
            groups,
            config,
            registered: RwLock::new(HashMap::new()),
            registering: Mutex::new(()),
            start: Instant::now(),
            ids: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
        });
        let mut runtime = Runtime {
            common: common.clone(),
            senders: Vec::new(),
            next: AtomicUsize::new(0),
            accepting: AtomicBool::new(true),
            threads: Mutex::new(Vec::new()),
        };
        let cpu = |i: usize| {
            let cpus = &common.config.cpus;
            (!cpus.is_empty()).then(|| cpus[i % cpus.len()])
        };
        let dispatchers = common.config.dispatchers;
        // Each thread joins the runtime as it starts, so a failed start
        // drops a runtime that stops what did start.
        for d in 0..dispatchers {
            let (tx, rx) = mpsc::channel();
            let c = common.clone();
            let pin = cpu(d);
            let h = thread::Builder::new()
                .name(format!("dispatcher-{d}"))
                .spawn(move || {
                    pin_to(pin);
                    dispatcher(&c, d, &rx);
                })?;
            runtime.senders.push(tx);
            runtime
                .threads
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .push(h);
        }
        for d in 0..dispatchers {
            for w in 0..common.config.workers {
                let c = common.clone();
                let pin = cpu(dispatchers + d * common.config.workers + w);
                let h = thread::Builder::new()
                    .name(format!("worker-{d}-{w}"))
                    .spawn(move || {
                        pin_to(pin);
                        worker(&c, d, WorkerId(w as u32));
                    })?;
                runtime
                    .threads
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(h);
            }
        }
        Ok(runtime)
    }

    /// What runs the requests.
    pub fn executor(&self) -> &E {
        &self.common.executor
    }

    /// The relative deadline a request labelled `label` gets when it names
    /// none, as the dispatchers give it: its function's registered one,
    /// else the configuration's.
    pub fn deadline(&self, label: &str) -> Deadline {
        self.common.deadline(label)
    }

    /// Registers `module` under `name` with its manifest's `settings`: its
    /// limits and environment to the executor, its deadline kept for its
    /// requests.
    ///
    /// # Errors
    ///
    /// The executor's refusal; [`Failure::BadRequest`] for a deadline the
    /// configuration already gives `name` (one place for each deadline).
    pub fn register_function(
        &self,
        name: &str,
        module: &[u8],
        settings: &Settings,
    ) -> Result<(), Failure> {
        let _one = self
            .common
            .registering
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if settings.deadline.is_some() && self.common.config.deadlines.override_for(name).is_some()
        {
            return Err(Failure::BadRequest(format!(
                "the node's --deadline names `{name}` too; give its deadline in one place"
            )));
        }
        self.common
            .executor
            .register(name, module, settings.deployment.clone())?;
        if let Some(deadline) = settings.deadline {
            self.common
                .registered
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(name.to_owned(), deadline);
        }
        Ok(())
    }

    /// Removes the function registered under `name`, and its deadline.
    ///
    /// # Errors
    ///
    /// The executor's refusal.
    pub fn unregister_function(&self, name: &str) -> Result<(), Failure> {
        let _one = self
            .common
            .registering
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.common.executor.unregister(name)?;
        self.common
            .registered
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        Ok(())
    }

    /// Hands `invoke` to the next dispatcher in turn; `reply` gets its
    /// answer exactly once.
    pub fn submit(&self, invoke: Invoke, reply: Reply) {
        let ticket = Ticket::new(reply);
        if !self.accepting.load(Ordering::Acquire) {
            return ticket.answer(Err(Failure::ShuttingDown));
        }
        let d = self.next.fetch_add(1, Ordering::Relaxed) % self.senders.len();
        // A dispatcher gone (stopped) drops the message, and the ticket
        // answers for itself.
        let _ = self.senders[d].send(Msg::Request(Arc::new(invoke), ticket));
    }

    /// Refuses every later request; those accepted still run.
    pub fn stop_accepting(&self) {
        self.accepting.store(false, Ordering::Release);
    }

    /// Stops accepting, lets every accepted request finish, and joins the
    /// threads.
    pub fn stop(self) {
        drop(self);
    }

    /// Requests accepted and not answered, over every group.
    pub fn in_flight(&self) -> usize {
        self.common
            .groups
            .iter()
            .map(|g| g.lock().in_flight())
            .sum()
    }

    /// Preemption latencies over every group: from the dispatcher asking a
    /// worker to switch to the worker starting its next request.
    pub fn switches(&self) -> Percentiles {
        let mut all = hdrhistogram::Histogram::<u64>::new_with_bounds(1, SWITCH_MAX, 3)
            .expect("1 ns to an hour at 3 significant digits is valid");
        for g in &self.common.groups {
            all.add(g.lock().switches())
                .expect("histograms of one precision add");
        }
        Percentiles {
            count: all.len(),
            p50: all.value_at_quantile(0.5),
            p99: all.value_at_quantile(0.99),
            max: all.max(),
        }
    }

    /// Workers running a request, over every group.
    pub fn busy_workers(&self) -> usize {
        self.common.groups.iter().map(|g| g.lock().busy()).sum()
    }

    fn stats(&self) -> GroupStats {
        let mut all = GroupStats::default();
        for g in &self.common.groups {
            let s = g.lock().stats();
            all.accepted += s.accepted;
            all.completed += s.completed;
            all.failed += s.failed;
            all.dropped += s.dropped;
            for (all, one) in all.refused.iter_mut().zip(s.refused) {
                *all += one;
            }
            all.preemptions += s.preemptions;
            all.take_backs += s.take_backs;
        }
        all
    }

    /// The runtime's counters in Prometheus text format.
    pub fn write_metrics(&self, out: &mut String) {
        let s = self.stats();
        let counters = [
            (
                "accepted",
                "Requests a dispatcher placed, held or dropped.",
                s.accepted,
            ),
            ("completed", "Requests that returned a value.", s.completed),
            (
                "failed",
                "Requests that ran and failed (trap, timeout, memory).",
                s.failed,
            ),
            (
                "dropped",
                "Requests a dispatcher's policy refused.",
                s.dropped,
            ),
            (
                "preemptions",
                "Times a running request was stopped for another.",
                s.preemptions,
            ),
            (
                "take_backs",
                "Preemptions that gave the request back to the policy.",
                s.take_backs,
            ),
        ];
        response::counters(out, "faasched_node", &counters);
        response::family(
            out,
            "faasched_node_refused_total",
            "Requests admission control refused, by reason.",
            "counter",
        );
        for why in Refusal::ALL.into_iter().filter(|r| r.admission()) {
            let _ = writeln!(
                out,
                "faasched_node_refused_total{{reason=\"{}\"}} {}",
                why.kind(),
                s.refused[why as usize]
            );
        }
        response::single(
            out,
            "faasched_node_in_flight",
            "Requests accepted and not answered.",
            "gauge",
            self.in_flight(),
        );
        self.executor().write_metrics(out);
    }

    /// The runtime's layout and counters as JSON.
    pub fn status_json(&self) -> serde_json::Value {
        let s = self.stats();
        let switches = self.switches();
        let c = &self.common.config;
        json!({
            "policy": self.common.groups.first().map(|g| g.lock().policy().to_string()),
            "dispatchers": c.dispatchers,
            "workers_per_dispatcher": c.workers,
            "cpus": c.cpus,
            "accepting": self.accepting.load(Ordering::Acquire),
            "in_flight": self.in_flight(),
            "busy_workers": self.busy_workers(),
            "accepted": s.accepted,
            "completed": s.completed,
            "failed": s.failed,
            "dropped": s.dropped,
            "refused": Refusal::ALL
                .into_iter()
                .filter(|r| r.admission())
                .map(|r| (r.kind().to_string(), json!(s.refused[r as usize])))
                .collect::<serde_json::Map<_, _>>(),
            "preemptions": s.preemptions,
            "switch_us": {
                "count": switches.count,
                "p50": switches.p50 as f64 / 1e3,
                "p99": switches.p99 as f64 / 1e3,
                "max": switches.max as f64 / 1e3,
            },
            "uptime_s": self.common.start.elapsed().as_secs_f64(),
            "executor": self.executor().status(),
        })
    }
}

impl<E: Executor> Drop for Runtime<E> {
    fn drop(&mut self) {
        self.stop_accepting();
        // A dispatcher reads its channel in order: once it has read the
        // stop, every request sent before is in its group, and the
        // workers may leave when their group has nothing in flight.
        for tx in &self.senders {
            let _ = tx.send(Msg::Stop);
        }
        let mut handles =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        let workers = handles.split_off(self.senders.len().min(handles.len()));
        for h in handles {
            let _ = h.join();
        }
        self.common.stopping.store(true, Ordering::Release);
        for g in &self.common.groups {
            for t in &g.threads {
                if let Some(t) = t.get() {
                    t.unpark();
                }
            }
        }
        for h in workers {
            let _ = h.join();
        }
    }
}

/// Pins the calling thread to `cpu`, if given; a failure leaves it
/// unpinned (a CPU outside the process's set), said once on stderr.
pub(crate) fn pin_to(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    let mut set = CpuSet::EMPTY;
    set.insert(cpu);
    if let Err(e) = sys::sched::set_affinity(0, &set) {
        eprintln!(
            "faasched: could not pin {} to CPU {cpu}: {e}",
            thread::current().name().unwrap_or("a thread")
        );
    }
}

/// Dispatcher `d`'s loop: each request to the policy in arrival order; the
/// running workers looked at every quantum.
fn dispatcher<E: Executor>(c: &Common<E>, d: usize, rx: &mpsc::Receiver<Msg>) {
    let g = &c.groups[d];
    let tick = g.lock().tick();
    let mut next_tick = tick.map(|t| c.now().saturating_add(t));
    loop {
        let msg = match next_tick {
            Some(at) => {
                let wait = at.saturating_sub(c.now());
                match rx.recv_timeout(Duration::from_nanos(wait)) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            None if c.config.poll => loop {
                match rx.try_recv() {
                    Ok(m) => break Some(m),
                    Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                    Err(mpsc::TryRecvError::Disconnected) => return,
                }
            },
            None => match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => return,
            },
        };
        match msg {
            Some(Msg::Request(invoke, ticket)) => {
                let id = RequestId(c.ids.fetch_add(1, Ordering::Relaxed));
                let deadline = invoke
                    .deadline
                    .map_or_else(|| c.deadline(invoke.label()), Deadline::Absolute);
                let known = c.executor.work(&invoke);
                let now = c.now();
                let fx = g.lock().arrive(now, id, deadline, known, invoke, ticket);
                c.apply(g, fx);
            }
            Some(Msg::Stop) => {
                // Whatever is still queued behind the stop is answered by
                // its ticket as the channel drops it.
                return;
            }
            None => {}
        }
        if let (Some(at), Some(t)) = (next_tick, tick) {
            let now = c.now();
            if now >= at {
                let fx = g.lock().on_tick(now);
                c.apply(g, fx);
                next_tick = Some(now.saturating_add(t));
            }
        }
    }
}

/// Worker `w` of group `d`: runs the head of its queue, reports, repeats;
/// sleeps when there is nothing to run; leaves once the runtime stops and
/// its group has nothing in flight.
fn worker<E: Executor>(c: &Common<E>, d: usize, w: WorkerId) {
    let g = &c.groups[d];
    let _ = g.threads[w.0 as usize].set(thread::current());
    let me = g.base + w.0 as usize;
    loop {
        let (next, fx) = g.lock().next(w, c.now());
        c.apply(g, fx);
        let (id, mut job) = match next {
            Next::Idle => {
                if c.stopping.load(Ordering::Acquire) {
                    if g.lock().in_flight() == 0 {
                        return;
                    }
                    thread::park_timeout(STOP_POLL);
                } else if c.config.poll {
                    while !g.woken[w.0 as usize].swap(false, Ordering::AcqRel)
                        && !c.stopping.load(Ordering::Acquire)
                    {
                        std::hint::spin_loop();
                    }
                } else {
                    thread::park();
                }
                continue;
            }
            Next::Resume { id, job } => (id, job),
            Next::Start { id, invoke } => match c.executor.start(me, &invoke) {
                Ok(job) => (id, job),
                Err(failure) => {
                    let (_, fx) = g.lock().ran(w, id, c.now(), Ran::Done(Err(failure)));
                    c.apply(g, fx);
                    continue;
                }
            },
        };
        loop {
            let ran = match c.executor.resume(me, &mut job) {
                Step::Done(result) => Ran::Done(result),
                Step::Stopped => Ran::Stopped(job),
            };
            let (after, fx) = g.lock().ran(w, id, c.now(), ran);
            c.apply(g, fx);
            match after {
                After::Continue(j) => job = j,
                After::Next => break,
            }
        }
    }
}
