//! The per-core model: cores, run queues per affinity mask, and the control flow
//! that moves tasks between them. The classes' arithmetic lives in fair.rs,
//! rt.rs and oracle.rs; this file decides *when* it applies.
//!
//! Invariants, kept by every public entry point:
//! 1. a task is in exactly one place: on a core, in one run queue, or blocked;
//! 2. no core is idle while a task whose mask contains it is waiting;
//! 3. each busy core has exactly one armed decision timer, at the earliest
//!    instant anything about its task can change:
//!    phase end, CPU watch, the tick that ends its turn, the end of a
//!    fair-server turn. Nothing is visited in between.

use crate::config::{Config, Discipline, FairClass, Prediction, RANDOM_PREDICTION_RANGE};
use crate::events::{Ev, Events};
use crate::fair::{Cfs, CfsTunables, Eevdf, Join, Moved, Running, idle_victim, reweighted};
use crate::oracle::{Fifo, Srpt};
use crate::rt::{RtQueue, RtRunning};
use crate::slab::Slab;
use crate::task::{State, Task, started};
use crate::ticks::Ticks;
use crate::{Notice, TaskStats};
use faasched_model::{Attrs, Class, CpuSet, IdMap, Nanos, Phase, Phases, TaskId, Time};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::cmp::Reverse;

const NIL: u32 = u32::MAX;

/// The non-RT part of a run queue: a fair class, or a sim-only discipline.
///
/// With a tag of its own: by default Rust hides the variant in a spare value
/// of EEVDF's memo, and every match on the class (several per event) then
/// decodes it (-0.7% instructions).
#[repr(u8)]
enum Lower {
    Eevdf(Eevdf),
    Cfs(Cfs),
    Srpt(Srpt),
    Fifo(Fifo),
}

impl Lower {
    fn waiting(&self) -> usize {
        match self {
            Lower::Eevdf(q) => q.waiting(),
            Lower::Cfs(q) => q.waiting(),
            Lower::Srpt(q) => q.waiting(),
            Lower::Fifo(q) => q.waiting(),
        }
    }

    /// Removes and returns the waiting task this class runs next.
    fn pop(&mut self, now: Time, tasks: &mut [Task]) -> Option<u32> {
        match self {
            Lower::Eevdf(q) => q.pop(now),
            Lower::Cfs(q) => q.pop(now, tasks),
            Lower::Srpt(q) => q.pop(),
            Lower::Fifo(q) => q.pop(),
        }
    }
}

/// One run queue: the tasks whose affinity is exactly `mask`.
struct Rq {
    mask: CpuSet,
    cores: Vec<u32>,
    rt: RtQueue,
    lower: Lower,
}

#[derive(Clone, Debug)]
struct Core {
    task: u32,
    /// When the running task's work starts (dispatch + switch cost).
    start: Time,
    busy_from: Option<Time>,
    /// Busy time of the spells that ended.
    busy_done: Nanos,
    /// Serving fair tasks on behalf of the fair server until then.
    server_until: Option<Time>,
    /// Whether a fair-server timer is pending.
    fs_armed: bool,
    /// The slice-expiry tick the armed decision timer includes, or 0 if none
    /// (an armed tick comes after the instant it was armed at, so is never
    /// 0). An event at this instant is on a tick without asking [`Ticks`]
    /// (-2.4% instructions).
    tick: Time,
}

/// The per-core kernel model.
pub struct Cores {
    cfg: Config,
    ticks: Ticks,
    tun: CfsTunables,
    tasks: Slab<Task>,
    /// Live tasks' slots by id, for the calls by id ([`Cores::set_attrs`],
    /// [`Cores::set_watch`]): built at the first, kept up to date from then
    /// on. Under a policy that makes none (cfs, fifo, srpt) each spawn and
    /// exit spares a hash insert and remove (-1.7% instructions in (b),
    /// -4% in (c)).
    by_id: Option<IdMap<TaskId, u32>>,
    cores: Vec<Core>,
    all: CpuSet,
    idle: CpuSet,
    rqs: Vec<Rq>,
    events: Events,
    seq: u64,
    rng: Pcg64Mcg,
    /// Running RT tasks, by priority: an RT wakeup that finds every busy
    /// core running one at its priority or above has nothing to preempt,
    /// without scanning them (FIFO's every arrival that finds no idle core).
    rt_running: RtRunning,
    /// Running SCHED_IDLE tasks: while there are none, a wakeup need not look
    /// for one to preempt.
    idle_running: usize,
    live: usize,
    /// Notices raised where no output is at hand (first runs with
    /// [`Config::report_starts`]; ended turns with [`Config::report_turns`]),
    /// until [`Cores::flush`].
    pending: Vec<Notice>,
}

impl Cores {
    pub fn new(cfg: &Config) -> Cores {
        let all = CpuSet::first(cfg.cores);
        let core = Core {
            task: NIL,
            start: 0,
            busy_from: None,
            busy_done: 0,
            server_until: None,
            fs_armed: false,
            tick: 0,
        };
        Cores {
            ticks: Ticks::new(cfg.tick()),
            tun: CfsTunables {
                latency: cfg.cfs_latency,
                min_granularity: cfg.cfs_min_granularity,
                wakeup_granularity: cfg.cfs_wakeup_granularity,
            },
            cfg: cfg.clone(),
            tasks: Slab::default(),
            by_id: None,
            cores: vec![core; cfg.cores],
            all,
            idle: all,
            rqs: Vec::new(),
            events: Events::new(cfg.cores),
            seq: 0,
            rng: Pcg64Mcg::seed_from_u64(cfg.seed),
            rt_running: RtRunning::default(),
            idle_running: 0,
            live: 0,
            pending: Vec::new(),
        }
    }

    fn new_lower(&self) -> Lower {
        match (self.cfg.discipline, self.cfg.fair) {
            (Discipline::Srpt(_), _) => Lower::Srpt(Srpt::new(self.cfg.cores)),
            (Discipline::FifoNp, _) => Lower::Fifo(Fifo::default()),
            (Discipline::AlpsKernel, _) => Lower::Cfs(Cfs::alps(self.cfg.alps_wait_limit)),
            (_, FairClass::Eevdf) => Lower::Eevdf(Eevdf::default()),
            (_, FairClass::Cfs) => Lower::Cfs(Cfs::default()),
        }
    }

    /// The run queue for an affinity mask (restricted to existing cores; an empty
    /// result means every core, as the kernel refuses an empty mask).
    fn rq_for(&mut self, mask: CpuSet) -> u32 {
        let mut mask = mask.and(&self.all);
        if mask.is_empty() {
            mask = self.all;
        }
        if let Some(i) = self.rqs.iter().position(|r| r.mask == mask) {
            return i as u32;
        }
        let lower = self.new_lower();
        self.rqs.push(Rq {
            mask,
            cores: mask.iter().map(|c| c as u32).collect(),
            rt: RtQueue::default(),
            lower,
        });
        (self.rqs.len() - 1) as u32
    }

    /// The CPU demand of `phases` as SRPT predicts it; 0 under the other
    /// disciplines, which never read it and spare the sum (-0.3%
    /// instructions in (b), -0.8% in (c) fifo).
    fn predict(&mut self, phases: &[Phase]) -> Nanos {
        let Discipline::Srpt(p) = self.cfg.discipline else {
            return 0;
        };
        let demand = Phase::cpu_total(phases);
        match p {
            Prediction::Exact => demand,
            Prediction::ErrorBound(b) => {
                (demand as f64 * self.rng.random_range(1.0 - b..=1.0 + b)) as Nanos
            }
            Prediction::Random(f) if self.rng.random::<f64>() < f => {
                let (lo, hi) = RANDOM_PREDICTION_RANGE;
                let (lo, hi) = ((lo as f64).ln(), (hi as f64).ln());
                self.rng.random_range(lo..hi).exp() as Nanos
            }
            Prediction::Random(_) => demand,
        }
    }

    pub fn spawn(
        &mut self,
        now: Time,
        id: TaskId,
        phases: Phases,
        attrs: Attrs,
        watch: Option<Nanos>,
        out: &mut Vec<Notice>,
    ) -> u32 {
        let rq = self.rq_for(attrs.cpus);
        self.seq += 1;
        let predicted = self.predict(&phases);
        let task = Task {
            id,
            phases,
            phase: 0,
            left: 0,
            // Derived from the attributes by `apply_attrs` below.
            weight: 0,
            slice: 0,
            rank: 0,
            hold: 0,
            queued_at: now,
            starved: false,
            attrs,
            rq,
            state: State::Blocked(now),
            seq: self.seq,
            acct_from: now,
            done: 0,
            predicted,
            watch,
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            turn_cpu: 0,
            rr_left: self.cfg.rr_timeslice,
            stats: TaskStats::default(),
            started: false,
        };
        let slot = self.tasks.insert(task);
        self.apply_attrs(slot, attrs, rq);
        if let Some(by_id) = &mut self.by_id {
            by_id.insert(id, slot);
        }
        self.live += 1;
        self.begin_phase(slot, now, Join::New, out);
        self.flush(out);
        slot
    }

    /// Hands the pending notices to `out`.
    /// There are mostly none or one, which `append` would copy with a call
    /// to `memcpy`.
    #[inline]
    fn flush(&mut self, out: &mut Vec<Notice>) {
        match self.pending.len() {
            0 => {}
            1 => out.extend(self.pending.pop()),
            _ => out.append(&mut self.pending),
        }
    }

    /// Starts the task's current phase (it is off every core and queue).
    fn begin_phase(&mut self, slot: u32, now: Time, how: Join, out: &mut Vec<Notice>) {
        let t = &mut self.tasks[slot as usize];
        match t.phases.get(t.phase).copied() {
            Some(Phase::Cpu(d)) => {
                t.left = d;
                if how == Join::Wake {
                    out.push(Notice::Woke(t.id));
                }
                self.join_lower(slot, now, how);
                self.place(slot, now);
            }
            Some(Phase::Io(d)) => {
                if started(&mut t.started, &mut t.stats, now) && self.cfg.report_starts {
                    out.push(Notice::Started(t.id));
                }
                t.state = State::Blocked(now);
                out.push(Notice::Blocked(t.id));
                self.events.push(now + d, Ev::IoDone(slot));
            }
            None => self.exit(slot, out),
        }
    }

    /// Gives the task (off every core and queue) `attrs`, its queue `rq`, and
    /// what the kernel derives from them: load weight and EEVDF request; under
    /// the ALPS paper's kernel, rank and hold. A task without a rank gets 0,
    /// the first: the paper's kernel reads 0 for a function missing from its
    /// map.
    fn apply_attrs(&mut self, slot: u32, attrs: Attrs, rq: u32) {
        let alps = self.cfg.discipline == Discipline::AlpsKernel;
        let t = &mut self.tasks[slot as usize];
        t.weight = Task::weight_of(&attrs);
        t.slice = attrs.clamped_slice().unwrap_or(self.cfg.base_slice);
        (t.rank, t.hold) = if alps {
            (attrs.rank.unwrap_or(0), attrs.slice.unwrap_or(0))
        } else {
            (0, 0)
        };
        t.attrs = attrs;
        t.rq = rq;
    }

    fn exit(&mut self, slot: u32, out: &mut Vec<Notice>) {
        let t = &mut self.tasks[slot as usize];
        t.phases = Phases::new();
        out.push(Notice::Exited(t.id, slot, t.stats));
        if let Some(by_id) = &mut self.by_id {
            by_id.remove(&t.id);
        }
        self.tasks.release(slot);
        self.live -= 1;
    }

    /// The smallest vruntime, brought up to `now`, among the fair tasks running
    /// from queue `rq` (Linux's `update_curr` precedes every enqueue).
    fn running_min_vruntime(&self, rq: u32, now: Time) -> Option<i64> {
        self.rqs[rq as usize]
            .cores
            .iter()
            .filter_map(|&c| self.fair_curr(c, rq))
            .map(|s| self.tasks[s as usize].vruntime_at(now))
            .min()
    }

    /// The fair task running on `core` from queue `rq`, if any.
    fn fair_curr(&self, core: u32, rq: u32) -> Option<u32> {
        let s = self.cores[core as usize].task;
        (s != NIL && self.tasks[s as usize].rq == rq && self.tasks[s as usize].rt_prio().is_none())
            .then_some(s)
    }

    /// The task joins the accounting of its queue's lower class (not RT ones).
    fn join_lower(&mut self, slot: u32, now: Time, how: Join) {
        let t = &mut self.tasks[slot as usize];
        if t.rt_prio().is_some() {
            return;
        }
        let rq = t.rq;
        match &mut self.rqs[rq as usize].lower {
            Lower::Eevdf(q) => q.join(t, now, how),
            Lower::Cfs(_) => {
                let running_min = self.running_min_vruntime(rq, now);
                let cores = self.rqs[rq as usize].cores.len() as u64;
                let (t, rqs) = (&mut self.tasks[slot as usize], &mut self.rqs);
                if let Lower::Cfs(q) = &mut rqs[rq as usize].lower {
                    q.join(t, how, running_min, cores, &self.tun);
                }
            }
            Lower::Srpt(_) | Lower::Fifo(_) => {}
        }
    }

    fn leave_lower(&mut self, slot: u32, now: Time) {
        let t = &mut self.tasks[slot as usize];
        if t.rt_prio().is_some() {
            return;
        }
        match &mut self.rqs[t.rq as usize].lower {
            Lower::Eevdf(q) => q.leave(t, now, self.ticks.period),
            Lower::Cfs(q) => q.leave(t),
            Lower::Srpt(_) | Lower::Fifo(_) => {}
        }
    }

    /// The lowest idle core of queue `rq`'s mask, if any.
    fn idle_core(&self, rq: u32) -> Option<u32> {
        if self.idle.is_empty() {
            return None; // the common case under load, and cheaper to test
        }
        let c = self.rqs[rq as usize].mask.and(&self.idle).lowest()?;
        Some(c as u32)
    }

    /// A runnable task (joined, in no queue) takes an idle core, preempts one,
    /// or waits.
    fn place(&mut self, slot: u32, now: Time) {
        self.place_at(slot, now, false);
    }

    /// [`Cores::place`], waiting at the head of its RT priority if `head`.
    /// Inlined, so that the arrivals' [`Cores::place`] does not test `head`
    /// (a runtime argument cost (c) fifo 1.4% of its instructions).
    #[inline(always)]
    fn place_at(&mut self, slot: u32, now: Time, head: bool) {
        if let Some(c) = self.idle_core(self.tasks[slot as usize].rq) {
            self.dispatch(c, slot, now);
        } else if let Some(c) = self.victim(slot, now) {
            self.sync(c, now);
            self.switch_out(c, now, true);
            self.dispatch(c, slot, now);
        } else {
            self.push_waiting(slot, now, head);
            self.after_wait(slot, now);
        }
    }

    /// The core a newly runnable task preempts, if its class says it should.
    fn victim(&self, slot: u32, now: Time) -> Option<u32> {
        let t = &self.tasks[slot as usize];
        let rq = t.rq as usize;
        if let Some(p) = t.rt_prio() {
            // RT preempts anything below its priority; a fair-server turn holds.
            let scan = || {
                self.rqs[rq]
                    .cores
                    .iter()
                    .map(|&c| {
                        let core = &self.cores[c as usize];
                        let rank = if core.server_until.is_some() {
                            u8::MAX
                        } else {
                            self.tasks[core.task as usize].rt_prio().unwrap_or(0)
                        };
                        (rank, c)
                    })
                    .min()
                    .filter(|&(rank, _)| rank < p)
                    .map(|(_, c)| c)
            };
            // Every busy core runs an RT task (so none a fair-server turn),
            // none below `p`: nothing to preempt, and no scan of the cores
            // to tell (-29% instructions in (c) fifo).
            let busy = self.cores.len() - self.idle.len();
            if self.rt_running.len == busy && !self.rt_running.any_below(p) {
                debug_assert_eq!(scan(), None, "RT victim");
                return None;
            }
            return scan();
        }
        let lower = &self.rqs[rq].lower;
        let running = self.running_fair(rq);
        if matches!(lower, Lower::Eevdf(_) | Lower::Cfs(_))
            && self.idle_running > 0
            && let Some(c) = idle_victim(t, running.clone(), &self.tasks)
        {
            return Some(c);
        }
        match lower {
            Lower::Eevdf(q) => q.wakeup_victim(now, t, running, &self.tasks),
            Lower::Cfs(q) => q.wakeup_victim(now, t, running, &self.tasks, &self.tun),
            Lower::Srpt(q) => {
                let mine = Srpt::remaining(t, t.done);
                let theirs = |r: Running| {
                    let core = &self.cores[r.core as usize];
                    let c = &self.tasks[r.slot as usize];
                    let done = c.done + now.saturating_sub(core.start.max(c.acct_from));
                    (Srpt::remaining(c, done), r.core)
                };
                let scan = || running.clone().map(theirs).max();
                // The task whose work runs out the latest has the most left,
                // unless it is still switching in (its work has not started,
                // so it has less left than that): then, or on one core, each
                // is looked at.
                let most = match q.latest() {
                    Some(c) if self.cores[c as usize].start <= now => {
                        let slot = self.cores[c as usize].task;
                        Some(theirs(Running { core: c, slot }))
                    }
                    _ => scan(),
                };
                let victim = |most: Option<(Nanos, u32)>| {
                    most.filter(|&(theirs, _)| mine < theirs).map(|(_, c)| c)
                };
                debug_assert_eq!(victim(most), victim(scan()), "SRPT victim");
                victim(most)
            }
            Lower::Fifo(_) => None,
        }
    }

    /// The non-RT tasks of queue `rq` on its cores (all busy).
    fn running_fair(&self, rq: usize) -> impl Iterator<Item = Running> + Clone + '_ {
        // Mostly one queue and no RT task running: every core runs one of
        // its fair tasks, so the test is skipped (a wakeup scans every core).
        let all = self.rqs.len() == 1 && self.rt_running.len == 0;
        // Slices taken once: reached through `self`, the scan reloaded each
        // vector's address and length at every core (-0.2% instructions).
        let (cores, tasks) = (&self.cores[..], &self.tasks[..]);
        self.rqs[rq].cores.iter().filter_map(move |&c| {
            let s = cores[c as usize].task;
            let fair = |r: &Task| r.rt_prio().is_none() && r.rq as usize == rq;
            (all || fair(&tasks[s as usize])).then_some(Running { core: c, slot: s })
        })
    }

    /// The task (off every core) starts waiting in its queue.
    ///
    /// This, [`Cores::sync`] and [`Cores::stop`] run at every preemption
    /// (sync at every event too) from several callers, so LLVM keeps them out
    /// of line unless told: inlined, the event path is 4% fewer instructions.
    #[inline(always)]
    fn push_waiting(&mut self, slot: u32, now: Time, head: bool) {
        let t = &mut self.tasks[slot as usize];
        // A task put back while it waits (its attributes changed) keeps its
        // place in the waiting order.
        if t.state != State::Queued {
            t.queued_at = now;
        }
        t.state = State::Queued;
        let rq = &mut self.rqs[t.rq as usize];
        match (t.rt_prio(), &mut rq.lower) {
            (Some(p), _) => rq.rt.push(slot, p, head),
            (None, Lower::Eevdf(q)) => q.push(slot, t),
            (None, Lower::Cfs(q)) => q.push(slot, t),
            (None, Lower::Srpt(q)) => q.push(slot, t),
            (None, Lower::Fifo(q)) => q.push(slot),
        }
    }

    fn remove_waiting(&mut self, slot: u32) {
        let t = &self.tasks[slot as usize];
        let rq = &mut self.rqs[t.rq as usize];
        let found = match (t.rt_prio(), &mut rq.lower) {
            (Some(p), _) => rq.rt.remove(slot, p),
            (None, Lower::Eevdf(q)) => q.remove(t),
            (None, Lower::Cfs(q)) => q.remove(slot, t),
            (None, Lower::Srpt(q)) => q.remove(slot, t),
            (None, Lower::Fifo(q)) => q.remove(slot),
        };
        debug_assert!(found, "task {slot} was not waiting where its state says");
    }

    /// A task started waiting. If its queue was empty until now, the running fair
    /// tasks sharing it have a turn that can end: arm their ticks (while tasks
    /// wait, every dispatch arms its own, so only this transition needs the scan).
    /// RT-busy cores of its mask owe the fair server.
    ///
    /// Inlined: a preempted task mostly joins waiters and no RT task runs, so
    /// nothing is left to do but these tests.
    #[inline]
    fn after_wait(&mut self, slot: u32, now: Time) {
        let t = &self.tasks[slot as usize];
        let rq = t.rq as usize;
        let lower = &self.rqs[rq].lower;
        let ticks = matches!(lower, Lower::Eevdf(_) | Lower::Cfs(_)) && lower.waiting() == 1;
        let server = self.rt_running.len > 0 && self.cfg.fair_server;
        if t.rt_prio().is_none() && (ticks || server) {
            self.arm_waited_on(rq, ticks, server, now);
        }
    }

    /// The scan of [`Cores::after_wait`], when there is one: tick timers for
    /// the running fair tasks of queue `rq` (if `ticks`), fair-server timers
    /// for its RT-busy cores (if `server`). Out of line, so that the tests
    /// before it inline.
    ///
    /// The tick timers, about half the cores' at once, take one pass over the
    /// timer tree instead of a climb each (-0.9% instructions).
    #[inline(never)]
    fn arm_waited_on(&mut self, rq: usize, ticks: bool, server: bool, now: Time) {
        for i in 0..self.rqs[rq].cores.len() {
            let c = self.rqs[rq].cores[i];
            let core = &self.cores[c as usize];
            if core.task == NIL {
                continue; // being switched; its next dispatch arms it
            }
            let curr_rt = self.tasks[core.task as usize].rt_prio().is_some();
            if ticks && !curr_rt && core.tick == 0 {
                let at = self.decision(c, now);
                self.events.arm_deferred(c, at);
            } else if server && curr_rt {
                self.arm_fair_server(c, now);
            }
        }
        self.events.settle();
    }

    /// Puts `slot` on core `c`, charging the context switch. This and
    /// [`Cores::run`] inline into every caller, as [`Cores::push_waiting`]
    /// does (-1.3% instructions).
    #[inline(always)]
    fn dispatch(&mut self, c: u32, slot: u32, now: Time) {
        let core = &mut self.cores[c as usize];
        core.task = slot;
        core.start = now + self.cfg.context_switch;
        core.busy_from.get_or_insert(now);
        self.idle.remove(c as usize);
        let t = &mut self.tasks[slot as usize];
        if started(&mut t.started, &mut t.stats, now) && self.cfg.report_starts {
            self.pending.push(Notice::Started(t.id));
        }
        if t.rt_prio().is_some() {
            // A fair-server turn ends when it runs out of fair tasks.
            core.server_until = None;
        }
        self.run(c, slot, now);
    }

    /// `slot` (accounted up to `now`) starts a turn on core `c`.
    #[inline(always)]
    fn run(&mut self, c: u32, slot: u32, now: Time) {
        let t = &mut self.tasks[slot as usize];
        t.state = State::Running(c);
        t.acct_from = now;
        t.turn_cpu = t.stats.cpu;
        self.idle_running += usize::from(t.attrs.class == Class::Idle);
        if let Some(p) = t.rt_prio() {
            self.rt_running.add(p);
            if self.fair_waiting(c) {
                self.arm_fair_server(c, now);
            }
        } else if let Lower::Eevdf(q) = &mut self.rqs[t.rq as usize].lower {
            q.on_run(t, now);
        } else if let Lower::Srpt(q) = &mut self.rqs[t.rq as usize].lower {
            q.on_run(c, t, self.cores[c as usize].start.max(now));
        }
        self.arm(c, now);
    }

    /// Accounts the running task of `c` up to `now` (inlined: see
    /// [`Cores::push_waiting`]); returns its slot, which the decision at
    /// every core event reads next (-0.5% instructions).
    #[inline(always)]
    fn sync(&mut self, c: u32, now: Time) -> u32 {
        let core = &self.cores[c as usize];
        let slot = core.task;
        let t = &mut self.tasks[slot as usize];
        let d = now - t.acct_from;
        if d == 0 {
            return slot;
        }
        let progress = now.saturating_sub(core.start.max(t.acct_from)).min(t.left);
        t.left -= progress;
        t.done += progress;
        t.stats.cpu += d;
        match t.attrs.class {
            // The quantum drains while the task is RR only (`task_tick_rt`).
            Class::Rr(_) => t.rr_left = t.rr_left.saturating_sub(d),
            Class::Fifo(_) => {}
            Class::Normal | Class::Batch | Class::Idle => {
                match &mut self.rqs[t.rq as usize].lower {
                    Lower::Eevdf(q) => q.account(t, d),
                    Lower::Cfs(_) => Cfs::account(t, d),
                    Lower::Srpt(_) | Lower::Fifo(_) => {}
                }
            }
        }
        t.acct_from = now;
        slot
    }

    /// Takes the (synced) running task off core `c`, leaving the core empty.
    /// Its timer stays armed: the caller dispatches to the core (re-arming it)
    /// or idles it (disarming it). Inlined: see [`Cores::push_waiting`].
    #[inline(always)]
    fn stop(&mut self, c: u32) -> u32 {
        let core = &mut self.cores[c as usize];
        let slot = std::mem::replace(&mut core.task, NIL);
        core.tick = 0;
        let t = &mut self.tasks[slot as usize];
        t.starved = false;
        if self.cfg.report_turns {
            self.pending
                .push(Notice::Turn(t.id, t.stats.cpu - t.turn_cpu));
        }
        self.idle_running -= usize::from(t.attrs.class == Class::Idle);
        if let Some(p) = t.rt_prio() {
            self.rt_running.remove(p);
        } else if let Lower::Eevdf(q) = &mut self.rqs[t.rq as usize].lower {
            q.on_stop(t);
        } else if let Lower::Srpt(q) = &mut self.rqs[t.rq as usize].lower {
            q.on_stop(c);
        }
        slot
    }

    /// Preempts the running task of `c`, accounted up to `now`, back into its
    /// queue (at the head of its priority if RT and `head`), counting an
    /// involuntary switch. (Its callers mostly accounted it already: a second
    /// [`Cores::sync`] here cost 0.9% of the instructions.)
    fn switch_out(&mut self, c: u32, now: Time, head: bool) {
        let slot = self.stop(c);
        self.tasks[slot as usize].stats.involuntary += 1;
        self.push_waiting(slot, now, head);
        // With several masks, another core of the preempted task's mask may be free.
        match self.idle_core(self.tasks[slot as usize].rq) {
            Some(free) => {
                self.remove_waiting(slot);
                self.dispatch(free, slot, now);
            }
            None => self.after_wait(slot, now),
        }
    }

    /// Core `c` is empty: run the best waiting task it may run, or idle.
    fn schedule(&mut self, c: u32, now: Time) {
        match self.pick(c, now) {
            Some(slot) => self.dispatch(c, slot, now),
            None => {
                let core = &mut self.cores[c as usize];
                core.server_until = None;
                if let Some(b) = core.busy_from.take() {
                    core.busy_done += now - b;
                }
                self.idle.insert(c as usize);
                self.events.disarm(c);
            }
        }
    }

    fn fair_waiting(&self, c: u32) -> bool {
        self.rqs
            .iter()
            .any(|r| r.mask.contains(c as usize) && r.lower.waiting() > 0)
    }

    /// Removes and returns the task core `c` should run next: RT first (fair
    /// first during a fair-server turn); among queues, the fullest per core.
    ///
    /// Mostly one queue and no RT task waits in it: nothing to choose between
    /// (and, with no RT task, a fair-server turn changes nothing). That case
    /// is inlined into the callers (-1.4% instructions; always, as LLVM
    /// stopped doing so after unrelated changes), the choice is not.
    #[inline(always)]
    fn pick(&mut self, c: u32, now: Time) -> Option<u32> {
        if let [r] = &mut self.rqs[..]
            && r.rt.len == 0
        {
            return if r.mask.contains(c as usize) {
                r.lower.pop(now, &mut self.tasks)
            } else {
                None
            };
        }
        self.choose(c, now)
    }

    /// [`Cores::pick`] among several queues, or RT and lower classes.
    #[inline(never)]
    fn choose(&mut self, c: u32, now: Time) -> Option<u32> {
        // One pass over the queues core `c` serves: the one with the highest RT
        // priority and the one with the most lower-class waiters per core, the
        // earlier queue on ties. The per-core count (a division) is computed
        // only once a second queue competes: mostly one queue has waiters.
        let per_core = |r: &Rq| r.lower.waiting() as u64 * 1024 / r.cores.len() as u64;
        let (mut rt, mut lower) = (None, None::<(usize, Option<u64>)>);
        for (i, r) in self.rqs.iter().enumerate() {
            if !r.mask.contains(c as usize) {
                continue;
            }
            if let Some(p) = r.rt.top_prio() {
                rt = rt.max(Some((p, Reverse(i))));
            }
            if r.lower.waiting() > 0 {
                lower = Some(match lower {
                    None => (i, None),
                    Some((best, n)) => {
                        let n = n.unwrap_or_else(|| per_core(&self.rqs[best]));
                        let mine = per_core(r);
                        if mine > n {
                            (i, Some(mine))
                        } else {
                            (best, Some(n))
                        }
                    }
                });
            }
        }
        let pop_rt = |me: &mut Self| rt.and_then(|(_, Reverse(i))| me.rqs[i].rt.pop());
        let pop_lower = |me: &mut Self| me.rqs[lower?.0].lower.pop(now, &mut me.tasks);
        if self.cores[c as usize].server_until.is_some() {
            pop_lower(self).or_else(|| pop_rt(self))
        } else {
            pop_rt(self).or_else(|| pop_lower(self))
        }
    }

    /// (Re)schedules core `c`'s decision event; its task is accounted to `now`.
    fn arm(&mut self, c: u32, now: Time) {
        let at = self.decision(c, now);
        self.events.arm(c, at);
    }

    /// When core `c`'s next decision falls, its task accounted up to `now`
    /// or before; notes the tick it includes. The core is borrowed once, mutably:
    /// indexing it again to store the tick had LLVM reload and re-check the
    /// vector after the store to `ticks` (+4% instructions in `arm`).
    #[inline(always)]
    fn decision(&mut self, c: u32, now: Time) -> Time {
        let core = &mut self.cores[c as usize];
        let t = &self.tasks[core.task as usize];
        let mut at = core.start.max(t.acct_from) + t.left;
        if let Some(w) = t.watch {
            // A watch past the phase's end changes nothing, however far (a
            // policy's watch is any duration).
            let reached = t.acct_from.saturating_add(w.saturating_sub(t.stats.cpu));
            if reached < at {
                at = at.min(match self.cfg.watch_at_tick {
                    None => reached,
                    Some(lag) => self.ticks.ceil(reached.max(now)) + lag,
                });
            }
        }
        let rq = &self.rqs[t.rq as usize];
        let mut tick = 0;
        match t.attrs.class {
            Class::Rr(_) => at = at.min(self.ticks.after(t.acct_from + t.rr_left, now)),
            Class::Fifo(_) => {}
            Class::Normal | Class::Batch | Class::Idle => {
                let expiry = match &rq.lower {
                    Lower::Eevdf(q) if q.waiting() > 0 => Some(q.expiry(t)),
                    Lower::Cfs(q) if q.waiting() > 0 => {
                        Some(q.expiry(t, rq.cores.len() as u64, &self.tun))
                    }
                    _ => None,
                };
                if let Some(e) = expiry {
                    tick = self.ticks.after(e, now);
                    at = at.min(tick);
                }
            }
        }
        if let Some(s) = core.server_until {
            at = at.min(s.max(now));
        }
        core.tick = tick;
        at
    }

    fn arm_fair_server(&mut self, c: u32, now: Time) {
        let core = &mut self.cores[c as usize];
        if !self.cfg.fair_server || core.fs_armed {
            return;
        }
        core.fs_armed = true;
        let at = now + self.cfg.fair_server_period - self.cfg.fair_server_runtime;
        self.events.push(at, Ev::FairServer(c));
    }

    pub fn next_event(&mut self) -> Option<Time> {
        self.events.peek().map(|(t, _)| t)
    }

    pub fn step(&mut self, out: &mut Vec<Notice>) -> Option<Time> {
        self.step_until(Time::MAX, out)
    }

    /// [`Cores::step`], if the next event is due by `bound`.
    pub fn step_until(&mut self, bound: Time, out: &mut Vec<Notice>) -> Option<Time> {
        let (now, ev) = self.events.fire_until(bound)?;
        match ev {
            Ev::Core(core) => self.on_core(core, now, out),
            Ev::IoDone(slot) => self.on_io_done(slot, now, out),
            Ev::FairServer(core) => self.on_fair_server(core, now),
        }
        self.flush(out);
        Some(now)
    }

    fn on_core(&mut self, c: u32, now: Time, out: &mut Vec<Notice>) {
        let slot = self.sync(c, now);
        let t = &mut self.tasks[slot as usize];
        if t.left == 0 {
            return self.end_phase(c, slot, now, out);
        }
        if self.cores[c as usize]
            .server_until
            .is_some_and(|s| s <= now)
        {
            self.cores[c as usize].server_until = None;
            self.switch_out(c, now, false);
            return self.schedule(c, now);
        }
        if t.watch.is_some_and(|w| w <= t.stats.cpu) {
            t.watch = None;
            out.push(Notice::Watch(t.id, t.stats.cpu));
        }
        // Mostly the armed tick itself; otherwise (a CPU watch, RR) ask.
        let at_tick = now == self.cores[c as usize].tick || self.ticks.is_tick(now);
        let rq = &mut self.rqs[t.rq as usize];
        let preempt = at_tick
            && match t.attrs.class {
                Class::Rr(p) => {
                    let expired = t.rr_left == 0;
                    if expired {
                        t.rr_left = self.cfg.rr_timeslice;
                    }
                    expired && rq.rt.has_prio(p)
                }
                Class::Fifo(_) => false,
                Class::Normal | Class::Batch | Class::Idle => match &mut rq.lower {
                    Lower::Eevdf(q) => q.tick(t) && !q.keeps_core(now, t),
                    // ALPS: a held task keeps its core, and its turn goes on,
                    // unless a task waited past the wait limit.
                    Lower::Cfs(q) if t.holds(now) && !q.starving(now) => false,
                    // Re-picked (or not asked), the task's turn goes on: Linux
                    // restarts it in `set_next_entity`, which a pick of the
                    // running task skips (CONFIG_FAIR_GROUP_SCHED, as distro
                    // kernels are built).
                    Lower::Cfs(q) => {
                        let cores = rq.cores.len() as u64;
                        q.tick(t, cores, &self.tun) && !q.keeps_core(now, t)
                    }
                    Lower::Srpt(_) | Lower::Fifo(_) => false,
                },
            };
        if preempt {
            self.switch_out(c, now, false);
            self.schedule(c, now);
        } else {
            self.arm(c, now);
        }
    }

    /// The running task's CPU phase ended: it goes on to its next phase.
    fn end_phase(&mut self, c: u32, slot: u32, now: Time, out: &mut Vec<Notice>) {
        let t = &mut self.tasks[slot as usize];
        t.phase += 1;
        if let Some(Phase::Cpu(d)) = t.phases.get(t.phase) {
            t.left = *d;
            return self.arm(c, now);
        }
        t.stats.voluntary += 1;
        self.stop(c);
        self.flush(out); // before the Blocked or Exited it causes
        self.leave_lower(slot, now);
        self.begin_phase(slot, now, Join::Wake, out);
        self.schedule(c, now);
    }

    fn on_io_done(&mut self, slot: u32, now: Time, out: &mut Vec<Notice>) {
        let t = &mut self.tasks[slot as usize];
        if let State::Blocked(since) = t.state {
            t.stats.io += now - since;
        }
        t.phase += 1;
        self.begin_phase(slot, now, Join::Wake, out);
    }

    fn on_fair_server(&mut self, c: u32, now: Time) {
        self.cores[c as usize].fs_armed = false;
        let slot = self.cores[c as usize].task;
        if slot == NIL || self.tasks[slot as usize].rt_prio().is_none() || !self.fair_waiting(c) {
            return;
        }
        self.cores[c as usize].server_until = Some(now + self.cfg.fair_server_runtime);
        self.sync(c, now);
        self.switch_out(c, now, true);
        self.schedule(c, now);
    }

    /// The slot of live task `id`, if any.
    fn slot_of(&mut self, id: TaskId) -> Option<u32> {
        if self.by_id.is_none() {
            // A task's phases are dropped at its exit, and a live task has
            // some (spawn's contract).
            let live = (0..self.tasks.len() as u32)
                .filter(|&s| !self.tasks[s as usize].phases.is_empty())
                .map(|s| (self.tasks[s as usize].id, s));
            self.by_id = Some(live.collect());
        }
        self.by_id.as_ref()?.get(&id).copied()
    }

    pub fn set_attrs(&mut self, now: Time, id: TaskId, attrs: Attrs, out: &mut Vec<Notice>) {
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        if self.tasks[slot as usize].attrs == attrs {
            return;
        }
        let state = self.tasks[slot as usize].state;
        // Take the task out of wherever it is, change it, put it back. A fair
        // task that stays fair takes its relative place along (`Join::Moved`,
        // as Linux's dequeue and enqueue with DEQUEUE_SAVE); one that comes
        // from or goes to RT joins as a wakeup would.
        if let State::Running(c) = state {
            self.sync(c, now);
        }
        let moved = self.moved(slot, now);
        let old_prio = self.tasks[slot as usize].rt_prio();
        match state {
            State::Blocked(_) => {}
            State::Queued => {
                self.remove_waiting(slot);
                self.leave_lower(slot, now);
            }
            State::Running(c) => {
                self.stop(c);
                self.leave_lower(slot, now);
            }
        }
        let rq = self.rq_for(attrs.cpus);
        self.apply_attrs(slot, attrs, rq);
        let t = &mut self.tasks[slot as usize];
        let how = match moved {
            Some(m) if t.rt_prio().is_none() => Join::Moved(m),
            _ => Join::Wake,
        };
        // An RT task whose priority falls goes to the head of its new level
        // (`__sched_setscheduler`: ENQUEUE_HEAD when the priority falls).
        let head = matches!((old_prio, t.rt_prio()), (Some(old), Some(new)) if new < old);
        match state {
            State::Blocked(_) => {
                // Its lag is reweighted now (`reweight_entity` of a sleeping
                // entity); it is placed when it wakes.
                if let Join::Moved(m) = how {
                    t.vlag = reweighted(t.vlag, m.weight, t.weight);
                }
            }
            State::Queued => {
                self.join_lower(slot, now, how);
                self.place_at(slot, now, head);
            }
            State::Running(c) => {
                self.join_lower(slot, now, how);
                self.continue_or_switch(c, slot, now, head);
            }
        }
        self.flush(out);
    }

    /// What fair task `slot` (accounted up to `now`) takes along if its
    /// attributes change and it stays fair; `None` for an RT task.
    fn moved(&mut self, slot: u32, now: Time) -> Option<Moved> {
        let t = &self.tasks[slot as usize];
        if t.rt_prio().is_some() {
            return None;
        }
        let rq = t.rq;
        let mut vruntime = 0;
        if matches!(self.rqs[rq as usize].lower, Lower::Cfs(_)) {
            let running_min = self.running_min_vruntime(rq, now);
            if let Lower::Cfs(q) = &mut self.rqs[rq as usize].lower {
                q.update_min(running_min);
                vruntime = self.tasks[slot as usize].vruntime - q.min_vruntime;
            }
        }
        let t = &self.tasks[slot as usize];
        Some(Moved {
            weight: t.weight,
            deadline: t.deadline - t.vruntime,
            vruntime,
        })
    }

    /// After its attributes changed, the task that was running on `c` keeps the
    /// core if `c` would pick it now; otherwise it is preempted and placed (at
    /// the head of its RT priority if `head`).
    fn continue_or_switch(&mut self, c: u32, slot: u32, now: Time, head: bool) {
        let allowed = self.rqs[self.tasks[slot as usize].rq as usize]
            .mask
            .contains(c as usize);
        if allowed {
            self.push_waiting(slot, now, true);
            let next = self.pick(c, now);
            if next == Some(slot) {
                // It stays: no switch, no cost, but a new turn.
                self.cores[c as usize].task = slot;
                return self.run(c, slot, now);
            }
            if let Some(n) = next {
                self.dispatch(c, n, now);
            }
            self.remove_waiting(slot);
        } else {
            self.schedule(c, now);
        }
        self.tasks[slot as usize].stats.involuntary += 1;
        self.place_at(slot, now, head);
    }

    pub fn set_watch(&mut self, now: Time, id: TaskId, watch: Option<Nanos>) {
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        self.tasks[slot as usize].watch = watch;
        if let State::Running(c) = self.tasks[slot as usize].state {
            self.sync(c, now);
            self.arm(c, now);
        }
    }

    /// Checks invariants 1 and 2 of the module docs, and the count of running
    /// SCHED_IDLE tasks (debug builds only: O(tasks + queues × cores) per call).
    pub fn check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        let mut placed = 0;
        for (c, core) in self.cores.iter().enumerate() {
            if core.task == NIL {
                assert!(
                    self.idle.contains(c),
                    "core {c} has no task but is not idle"
                );
            } else {
                let t = &self.tasks[core.task as usize];
                assert_eq!(
                    t.state,
                    State::Running(c as u32),
                    "core {c} runs a task that disagrees"
                );
                placed += 1;
            }
        }
        let idle_class = self
            .cores
            .iter()
            .filter(|c| c.task != NIL && self.tasks[c.task as usize].attrs.class == Class::Idle)
            .count();
        assert_eq!(idle_class, self.idle_running, "SCHED_IDLE tasks miscounted");
        for rq in &self.rqs {
            let waiting = rq.rt.len + rq.lower.waiting();
            placed += waiting;
            if waiting > 0 {
                assert!(
                    rq.mask.and(&self.idle).is_empty(),
                    "a core idles while {waiting} task(s) it may run wait"
                );
            }
        }
        let mut blocked = 0;
        for s in self.events.io_pending() {
            assert!(
                matches!(self.tasks[s as usize].state, State::Blocked(_)),
                "task {s} waits for I/O but is not blocked"
            );
            blocked += 1;
        }
        assert_eq!(
            placed + blocked,
            self.live,
            "tasks are not each in exactly one place"
        );
    }

    pub fn busy(&self, now: Time) -> Nanos {
        self.busy_by_core(now).sum()
    }

    /// Each core's busy time up to `now`.
    pub fn busy_by_core(&self, now: Time) -> impl Iterator<Item = Nanos> + '_ {
        self.cores
            .iter()
            .map(move |c| c.busy_done + c.busy_from.map_or(0, |b| now.saturating_sub(b)))
    }

    pub fn in_flight(&self) -> usize {
        self.live
    }
}
