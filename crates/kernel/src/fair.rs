//! The fair classes' per-queue state: EEVDF and legacy CFS.
//!
//! Both work on one run queue shared by the cores of an affinity mask. The core
//! model (cores.rs) owns control flow; this file owns the arithmetic: where a
//! joining task is placed, who is picked, whether a wakeup preempts, and when a
//! running task's turn is over.

use crate::deadlines::Deadlines;
use crate::task::{NICE_0, Task};
use crate::treap::Key;
use faasched_model::{Class, Nanos, Time};
use std::collections::BTreeSet;

/// Why a task joins a fair queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// A new task (fork + exec of the function process).
    New,
    /// Woken from I/O, or moved into a fair class from another class.
    Wake,
    /// Its attributes changed while it was runnable in a fair class, and it
    /// stays in one (nice, slice, affinity). Linux dequeues it with
    /// `DEQUEUE_SAVE` and enqueues it again, not as a wakeup: what was
    /// relative stays so.
    Moved(Moved),
}

/// What a fair task takes along when its attributes change ([`Join::Moved`]),
/// measured before the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// Its load weight before.
    pub weight: u32,
    /// EEVDF: its deadline less its vruntime (PLACE_REL_DEADLINE).
    pub deadline: i64,
    /// Legacy CFS: its vruntime less its queue's `min_vruntime` (the
    /// renormalisation of a dequeue that is not a sleep).
    pub vruntime: i64,
}

/// `x · from / to`, as `reweight_entity` scales a lag or a relative deadline
/// from one load weight to another.
pub fn reweighted(x: i64, from: u32, to: u32) -> i64 {
    (x as i128 * from as i128 / to.max(1) as i128) as i64
}

/// A running task as a wakeup-preemption check sees it (its vruntime is
/// accounted lazily: [`Task::vruntime_at`]).
#[derive(Clone, Copy, Debug)]
pub struct Running {
    pub core: u32,
    pub slot: u32,
}

/// EEVDF state of one queue. `S` and `W` are Linux's `avg_vruntime` sums: the
/// weighted sum of vruntimes and the sum of weights of every task in the queue,
/// running or waiting; V = S / W is the zero-lag point. The sums are 128-bit,
/// but divided in 64 bits whenever the dividend fits (nearly always): 128-bit
/// division is several times slower and the quotient is the same.
#[derive(Debug, Default)]
pub struct Eevdf {
    tree: Deadlines,
    weight: i128,
    /// Σ w·v over joined tasks, running ones as of their last accounting.
    s_static: i128,
    /// Running tasks, and the sum of their `acct_from`: between accountings a
    /// running task's w·v grows by NICE_0 per ns, so
    /// S(t) = s_static + NICE_0·(n_run·t − Σ acct_from).
    n_run: i64,
    sum_acct_from: i128,
    /// Multiset of the slices of joined tasks, for RUN_TO_PARITY's min slice:
    /// (slice, count), ascending, so that every dispatch reads the least
    /// first instead of scanning (-0.2% instructions).
    slices: Vec<(Nanos, u32)>,
    /// The last pick computed, kept exactly up to date (or dropped) by every
    /// change: a tick that preempts asks for the pick twice, once to compare
    /// it with the running task and once to run it after that task rejoined
    /// the waiting.
    memo: Option<Memo>,
}

/// What [`Eevdf::pick`] returns at `now`, and how it was found.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Memo {
    now: Time,
    eligibility: Eligibility,
    /// The waiting task picked, if any task waits.
    pick: Option<(Key, u32)>,
    /// Whether the pick is eligible (else no waiting task is).
    eligible: bool,
}

/// The eligibility test of one queue at one instant: vruntime `v` is eligible
/// (lag ≥ 0) when v·W ≤ S. Computing S once serves every test of a pick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eligibility {
    sum: i128,
    /// W: a sum of task weights (each at most 88761) fits an i64, which makes
    /// v·W one widening multiplication.
    weight: i64,
}

impl Eligibility {
    /// Whether vruntime `v` is eligible.
    pub fn admits(self, v: i64) -> bool {
        self.weight == 0 || v as i128 * self.weight as i128 <= self.sum
    }

    /// The largest eligible vruntime: `admits(v)` is `v <= threshold()`
    /// (v·W ≤ S is v ≤ ⌊S/W⌋). One division, where a test repeated over many
    /// vruntimes (every running task at a wakeup) would multiply each time.
    /// S/W is a weighted mean of vruntimes, so it fits an i64 (the clamp only
    /// keeps the conversion total).
    pub fn threshold(self) -> i64 {
        if self.weight == 0 {
            return i64::MAX;
        }
        match i64::try_from(self.sum) {
            Ok(s) => s.div_euclid(self.weight),
            Err(_) => {
                let q = self.sum.div_euclid(self.weight as i128);
                q.clamp(i64::MIN as i128, i64::MAX as i128) as i64
            }
        }
    }
}

impl Eevdf {
    fn sum(&self, now: Time) -> i128 {
        self.s_static + NICE_0 as i128 * (self.n_run as i128 * now as i128 - self.sum_acct_from)
    }

    /// The eligibility test at `now`.
    pub fn eligibility(&self, now: Time) -> Eligibility {
        Eligibility {
            sum: self.sum(now),
            weight: self.weight as i64,
        }
    }

    /// The zero-lag vruntime V at `now`.
    fn avg(&self, now: Time) -> Option<i64> {
        (self.weight > 0).then(|| {
            let s = self.sum(now);
            match i64::try_from(s) {
                Ok(s) => s.div_euclid(self.weight as i64),
                Err(_) => s.div_euclid(self.weight) as i64,
            }
        })
    }

    fn min_slice(&self) -> Option<Nanos> {
        self.slices.first().map(|s| s.0)
    }

    /// Places `t` (lag-preserving, `place_entity`) and adds it to the sums.
    pub fn join(&mut self, t: &mut Task, now: Time, how: Join) {
        self.memo = None;
        let w = t.weight as i128;
        let vslice = t.vdelta(t.slice);
        if let Join::Moved(m) = how {
            t.vlag = reweighted(t.vlag, m.weight, t.weight);
        }
        if let Some(avg) = self.avg(now) {
            let lag = match how {
                Join::New => 0,
                Join::Wake | Join::Moved(_) => {
                    let scaled = t.vlag as i128 * (self.weight + w);
                    match i64::try_from(scaled) {
                        Ok(x) => x / self.weight as i64,
                        Err(_) => (scaled / self.weight) as i64,
                    }
                }
            };
            t.vruntime = avg - lag;
        }
        t.deadline = t.vruntime
            + match how {
                // PLACE_DEADLINE_INITIAL: a new task's first request is half a slice.
                Join::New => vslice / 2,
                Join::Wake => vslice,
                // The request it had, reweighted.
                Join::Moved(m) => reweighted(m.deadline, m.weight, t.weight),
            };
        self.s_static += w * t.vruntime as i128;
        self.weight += w;
        match self.slices.binary_search_by_key(&t.slice, |s| s.0) {
            Ok(i) => self.slices[i].1 += 1,
            Err(i) => self.slices.insert(i, (t.slice, 1)),
        }
    }

    /// Removes a task that is neither running nor waiting from the sums, keeping
    /// its lag, clamped as `update_entity_lag` does.
    pub fn leave(&mut self, t: &mut Task, now: Time, tick: Nanos) {
        self.memo = None;
        let w = t.weight as i128;
        let limit = t.vdelta((2 * t.slice).max(tick));
        if let Some(avg) = self.avg(now) {
            t.vlag = (avg - t.vruntime).clamp(-limit, limit);
        }
        self.s_static -= w * t.vruntime as i128;
        self.weight -= w;
        if let Ok(i) = self.slices.binary_search_by_key(&t.slice, |s| s.0) {
            self.slices[i].1 -= 1;
            if self.slices[i].1 == 0 {
                self.slices.remove(i);
            }
        }
    }

    /// `t` starts a turn on a core at `now` (its `acct_from` is `now`).
    /// Inlined into the dispatch, as it was before its memo test made it
    /// look too large to LLVM (-0.8% instructions).
    #[inline]
    pub fn on_run(&mut self, t: &mut Task, now: Time) {
        // S(now) gains NICE_0·(now − acct_from), nothing: a memo of `now`
        // stays exact.
        if self.memo.is_some_and(|m| m.now != now) {
            self.memo = None;
        }
        self.n_run += 1;
        self.sum_acct_from += now as i128;
        let protect = self.min_slice().unwrap_or(t.slice).min(t.slice);
        t.vprot = t.deadline.min(t.vruntime + t.vdelta(protect));
    }

    /// `t` leaves its core; it has been accounted up to now.
    pub fn on_stop(&mut self, t: &Task) {
        // S(now) loses NICE_0·(now − acct_from): nothing if that is the memo's now.
        if self.memo.is_some_and(|m| m.now != t.acct_from) {
            self.memo = None;
        }
        self.n_run -= 1;
        self.sum_acct_from -= t.acct_from as i128;
    }

    /// Accounts `d` of running time to `t` (before `t.acct_from` moves on).
    ///
    /// S(t) changes by w·dv − NICE_0·d, which is zero at nice 0 (dv = d): the
    /// memoised pick then stays exact. That keeps it for the next core whose
    /// tick falls on the same instant (ticks line up across cores), unless a
    /// change of the waiting set drops it first.
    #[inline]
    pub fn account(&mut self, t: &mut Task, d: Nanos) {
        if t.weight != NICE_0 {
            self.memo = None;
        }
        let dv = t.vdelta(d);
        t.vruntime += dv;
        self.s_static += t.weight as i128 * dv as i128;
        self.sum_acct_from += d as i128;
    }

    /// Number of waiting tasks.
    pub fn waiting(&self) -> usize {
        self.tree.len()
    }

    /// `slot` starts waiting. A memoised pick stays exact: the newcomer
    /// replaces it if it comes first by the same rule.
    pub fn push(&mut self, slot: u32, t: &Task) {
        let key = (t.deadline, t.seq);
        self.tree.insert(key, t.vruntime, slot);
        if let Some(m) = &mut self.memo {
            let eligible = m.eligibility.admits(t.vruntime);
            let first = match m.pick {
                None => true,
                Some((k, _)) if m.eligible => eligible && key < k,
                Some((k, _)) => eligible || key < k,
            };
            if first {
                m.pick = Some((key, slot));
                m.eligible |= eligible;
            }
        }
    }

    pub fn remove(&mut self, t: &Task) -> bool {
        self.memo = None;
        self.tree.remove((t.deadline, t.seq)).is_some()
    }

    /// The waiting task EEVDF picks, computed afresh.
    fn compute(&self, now: Time) -> Memo {
        self.compute_with(now, self.eligibility(now))
    }

    /// The waiting task EEVDF picks at `now`, whose eligibility test is
    /// known.
    fn compute_with(&self, now: Time, eligibility: Eligibility) -> Memo {
        let (found, eligible) = match self.tree.first_eligible(|v| eligibility.admits(v)) {
            Some(e) => (Some(e), true),
            None => (self.tree.first(), false),
        };
        Memo {
            now,
            eligibility,
            pick: found.map(|(key, _, slot)| (key, slot)),
            eligible,
        }
    }

    /// The waiting task EEVDF picks: the earliest deadline among eligible ones.
    /// If none is eligible against this queue's average (possible only because
    /// one queue here stands for several Linux CPUs, each averaging only its own
    /// tasks), the earliest deadline, so that a free core never idles.
    fn pick(&mut self, now: Time) -> Memo {
        match self.memo {
            Some(m) if m.now == now => {
                debug_assert_eq!(m, self.compute(now), "stale EEVDF pick");
                m
            }
            _ => *self.memo.insert(self.compute(now)),
        }
    }

    /// Removes and returns the pick, and memoises the next: the next core
    /// whose tick falls on this instant (ticks line up across cores) mostly
    /// asks for it. The eligibility test stays that of the memo (the task
    /// leaves the waiting, not the sums); if no task was eligible, none is.
    pub fn pop(&mut self, now: Time) -> Option<u32> {
        let m = self.pick(now);
        let (key, slot) = m.pick?;
        self.tree.remove(key);
        self.memo = Some(if m.eligible {
            self.compute_with(now, m.eligibility)
        } else {
            Memo {
                pick: self.tree.first().map(|(key, _, slot)| (key, slot)),
                ..m
            }
        });
        Some(slot)
    }

    /// Whether the running `curr` keeps its core: whether the pick over the
    /// waiting tasks and curr together (`pick_eevdf` with curr in the running,
    /// same fallback as [`Eevdf::pop`]) is curr. Linux then skips the switch.
    pub fn keeps_core(&mut self, now: Time, curr: &Task) -> bool {
        let m = self.pick(now);
        let Some((key, _)) = m.pick else {
            return true;
        };
        let mine = (curr.deadline, curr.seq);
        match (m.eligibility.admits(curr.vruntime), m.eligible) {
            // Only curr is eligible: it is the pick.
            (true, false) => true,
            // Only the waiting task is.
            (false, true) => false,
            // Both or neither eligible: the earlier deadline wins.
            (true, true) | (false, false) => mine < key,
        }
    }

    /// `check_preempt_wakeup_fair` for waking task `p` against the running
    /// tasks, in ascending core order: the core to preempt, if any. `p` is
    /// joined but not yet waiting; no SCHED_IDLE task it would preempt first
    /// ([`idle_victim`]) runs.
    pub fn wakeup_victim(
        &self,
        now: Time,
        p: &Task,
        running: impl Iterator<Item = Running>,
        tasks: &[Task],
    ) -> Option<u32> {
        let e = self.eligibility(now);
        if p.attrs.class != Class::Normal || !e.admits(p.vruntime) {
            return None;
        }
        // pick_eevdf must return p: no eligible waiting task may come first.
        if let Some((key, _, _)) = self.tree.first_eligible(|v| e.admits(v))
            && key < (p.deadline, p.seq)
        {
            return None;
        }
        let eligible_max = e.threshold();
        // The preemptible task with the latest (deadline, core). A task that
        // comes before the best found so far cannot win, so it is skipped
        // before its vruntime is brought up to date (most are, at a wakeup
        // scanning every core). Cores come in ascending order, so a task
        // comes before the best when its deadline is earlier: one comparison
        // where the pair took several (-1.0% instructions).
        let (mut best, mut latest) = (None, i64::MIN);
        for r in running {
            let c = &tasks[r.slot as usize];
            if c.deadline < latest {
                continue;
            }
            let v = c.vruntime_at(now);
            // `pick_eevdf` drops an ineligible running task before it looks
            // at its protection: RUN_TO_PARITY keeps an eligible one, unless
            // PREEMPT_SHORT cancels the protection.
            let eligible = v <= eligible_max;
            let protected = eligible && v < c.vprot && p.slice >= c.slice;
            let curr_first = eligible && c.deadline <= p.deadline;
            if !protected && !curr_first {
                debug_assert!(best.is_none_or(|b| b < r.core), "cores out of order");
                (best, latest) = (Some(r.core), c.deadline);
            }
        }
        best
    }

    /// When the running `t` (accounted up to `t.acct_from`) must be
    /// decided on at a tick: when its protection ends (`vprot`, at most its
    /// deadline). Since 6.17 `update_curr` asks for a pick at every tick
    /// once the running task is no longer protected ("always trigger resched
    /// at the end of a protected period"), not only once its request
    /// expired: a re-picked task keeps its core but not a new protection,
    /// so each tick after asks again. With every slice equal, protection
    /// ends at the deadline and nothing changes; a task with a longer
    /// custom slice than a waiter's is decided on sooner.
    pub fn expiry(&self, t: &Task) -> Time {
        t.acct_from + t.rdelta(t.vprot.min(t.deadline) - t.vruntime)
    }

    /// At a tick: if `t` used its request, issue the next one
    /// (`update_deadline`). Returns whether a pick is due: the request
    /// expired, or `t`'s protection ended (see [`Eevdf::expiry`]).
    #[inline]
    pub fn tick(&self, t: &mut Task) -> bool {
        if t.vruntime < t.deadline {
            return t.vruntime >= t.vprot;
        }
        t.deadline = t.vruntime + t.vdelta(t.slice);
        true
    }
}

/// A non-idle wakee preempts a SCHED_IDLE task at once (both fair classes,
/// before their own checks).
pub fn idle_victim(
    p: &Task,
    mut running: impl Iterator<Item = Running>,
    tasks: &[Task],
) -> Option<u32> {
    if p.attrs.class == Class::Idle {
        return None;
    }
    running
        .find(|r| tasks[r.slot as usize].attrs.class == Class::Idle)
        .map(|r| r.core)
}

/// Legacy CFS tunables, already scaled for the machine.
#[derive(Clone, Copy, Debug)]
pub struct CfsTunables {
    pub latency: Nanos,
    pub min_granularity: Nanos,
    pub wakeup_granularity: Nanos,
}

/// Legacy CFS state of one queue.
#[derive(Debug, Default)]
pub struct Cfs {
    /// Waiting tasks by (rank, vruntime, seq): the rank is 0 but under the
    /// ALPS paper's patched `entity_before`.
    tree: BTreeSet<(u32, i64, u64, u32)>,
    /// The ALPS kernel's starvation guard ([`Config::alps_wait_limit`]);
    /// `None` for plain CFS and the paper's kernel as published.
    ///
    /// [`Config::alps_wait_limit`]: crate::Config::alps_wait_limit
    wait_limit: Option<Nanos>,
    /// With a wait limit, the waiting tasks again by (since when they wait,
    /// seq): the order in which those past the limit run.
    waiters: BTreeSet<(Time, u64, u32)>,
    /// Monotonic floor of the queue's vruntimes (`min_vruntime`).
    pub min_vruntime: i64,
    weight: u64,
    joined: u64,
}

impl Cfs {
    /// The queue of the ALPS paper's kernel, with its starvation guard if
    /// `wait_limit` is set.
    pub fn alps(wait_limit: Option<Nanos>) -> Cfs {
        Cfs {
            wait_limit,
            ..Cfs::default()
        }
    }

    /// The instant the longest-waiting task reaches the wait limit, if a
    /// limit is set and a task waits.
    fn next_starving(&self) -> Option<Time> {
        let limit = self.wait_limit?;
        self.waiters.first().map(|&(since, _, _)| since + limit)
    }

    /// Whether a task has waited past the wait limit at `now`: then the
    /// longest waiting runs next, holds end with the CFS turn, and no wakeup
    /// preempts.
    pub fn starving(&self, now: Time) -> bool {
        self.next_starving().is_some_and(|at| at <= now)
    }

    /// Raises `min_vruntime` to the smallest vruntime among waiting and running
    /// tasks (`update_min_vruntime`).
    pub fn update_min(&mut self, running_min: Option<i64>) {
        // The patched kernel takes the leftmost by its own order, as here.
        let waiting = self.tree.first().map(|e| e.1);
        if let Some(m) = [waiting, running_min].into_iter().flatten().min() {
            self.min_vruntime = self.min_vruntime.max(m);
        }
    }

    /// `sched_slice`: the wall-clock turn `t` gets. One queue stands for `cores`
    /// Linux CPUs, so its length and weight are divided among them.
    pub fn slice(&self, t: &Task, cores: u64, tun: &CfsTunables) -> Nanos {
        let nr = self.joined.div_ceil(cores).max(1);
        let nr_latency = (tun.latency / tun.min_granularity).max(1);
        let period = if nr > nr_latency {
            nr * tun.min_granularity
        } else {
            tun.latency
        };
        let w = (self.weight / cores).max(t.weight as u64);
        period * t.weight as u64 / w
    }

    /// Places `t` (`place_entity`) and counts it in. `running_min` is the
    /// smallest vruntime among the queue's running tasks.
    pub fn join(
        &mut self,
        t: &mut Task,
        how: Join,
        running_min: Option<i64>,
        cores: u64,
        tun: &CfsTunables,
    ) {
        self.update_min(running_min);
        self.joined += 1;
        self.weight += t.weight as u64;
        t.vruntime = match how {
            // START_DEBIT: a new task starts one virtual slice behind.
            Join::New => self.min_vruntime + t.vdelta(self.slice(t, cores, tun)),
            // GENTLE_FAIR_SLEEPERS: a sleeper gets at most half a latency of
            // credit; a SCHED_IDLE one half the minimum granularity (5.15+).
            Join::Wake => {
                let credit = match t.attrs.class {
                    Class::Idle => tun.min_granularity,
                    _ => tun.latency,
                };
                t.vruntime.max(self.min_vruntime - (credit / 2) as i64)
            }
            Join::Moved(m) => self.min_vruntime + m.vruntime,
        };
    }

    /// Counts `t` out (it blocked, exited, or moves elsewhere).
    pub fn leave(&mut self, t: &Task) {
        self.joined -= 1;
        self.weight -= t.weight as u64;
    }

    pub fn account(t: &mut Task, d: Nanos) {
        t.vruntime += t.vdelta(d);
    }

    pub fn waiting(&self) -> usize {
        debug_assert!(
            self.wait_limit.is_none() || self.waiters.len() == self.tree.len(),
            "the wait order and the rank order hold different tasks"
        );
        self.tree.len()
    }

    pub fn push(&mut self, slot: u32, t: &Task) {
        self.tree.insert((t.rank, t.vruntime, t.seq, slot));
        if self.wait_limit.is_some() {
            self.waiters.insert((t.queued_at, t.seq, slot));
        }
    }

    pub fn remove(&mut self, slot: u32, t: &Task) -> bool {
        if self.wait_limit.is_some() {
            self.waiters.remove(&(t.queued_at, t.seq, slot));
        }
        self.tree.remove(&(t.rank, t.vruntime, t.seq, slot))
    }

    /// The next task to run: the longest waiting if it waited past the wait
    /// limit at `now` (marked [`Task::starved`]), else the first by rank and
    /// vruntime.
    pub fn pop(&mut self, now: Time, tasks: &mut [Task]) -> Option<u32> {
        if self.wait_limit.is_none() {
            return self.tree.pop_first().map(|e| e.3);
        }
        if self.starving(now) {
            let (_, _, slot) = self.waiters.pop_first()?;
            let t = &mut tasks[slot as usize];
            t.starved = true;
            self.tree.remove(&(t.rank, t.vruntime, t.seq, slot));
            return Some(slot);
        }
        let (_, _, seq, slot) = self.tree.pop_first()?;
        self.waiters
            .remove(&(tasks[slot as usize].queued_at, seq, slot));
        Some(slot)
    }

    /// `pick_next_entity` with curr: curr keeps the core unless a waiting task
    /// comes first (smaller rank, or the same rank and a smaller vruntime; or
    /// one waited past the wait limit at `now`).
    pub fn keeps_core(&self, now: Time, curr: &Task) -> bool {
        !self.starving(now)
            && self
                .tree
                .first()
                .is_none_or(|&(r, v, s, _)| (curr.rank, curr.vruntime, curr.seq) < (r, v, s))
    }

    /// `check_preempt_wakeup`: preempt the running task furthest ahead of `p` in
    /// vruntime, if by more than the wakeup granularity. No SCHED_IDLE task it
    /// would preempt first ([`idle_victim`]) runs. Under the ALPS hooks,
    /// `__schedule` then keeps a held task, and picks `p` only if it comes
    /// before the task it would replace (always so when every rank is 0).
    /// With the starvation guard, no wakeup preempts while a task waits past
    /// the wait limit, nor preempts a task picked for that reason.
    pub fn wakeup_victim(
        &self,
        now: Time,
        p: &Task,
        running: impl Iterator<Item = Running>,
        tasks: &[Task],
        tun: &CfsTunables,
    ) -> Option<u32> {
        if p.attrs.class != Class::Normal || self.starving(now) {
            return None;
        }
        let gran = p.vdelta(tun.wakeup_granularity);
        running
            .filter_map(|r| {
                let c = &tasks[r.slot as usize];
                let v = c.vruntime_at(now);
                (!c.holds(now) && !c.starved && (p.rank, p.vruntime) < (c.rank, v))
                    .then_some((v - p.vruntime, r.core))
            })
            .filter(|&(diff, _)| diff > gran)
            .max()
            .map(|(_, core)| core)
    }

    /// The first instant at which `check_preempt_tick` would ask the running `t`
    /// to give up its core, given the queue as it is now.
    pub fn expiry(&self, t: &Task, cores: u64, tun: &CfsTunables) -> Time {
        let ideal = self.slice(t, cores, tun);
        let turn = t.stats.cpu - t.turn_cpu;
        // delta_exec > ideal_runtime.
        let by_slice = t.acct_from + (ideal + 1).saturating_sub(turn);
        // delta_exec ≥ min_granularity and curr ahead of the leftmost by > ideal.
        let by_lead = self.tree.first().map(|&(_, left, _, _)| {
            // Linux compares the vruntime lead with the unscaled ideal runtime.
            let gap = left + ideal as i64 + 1 - t.vruntime;
            let min_gran = t.acct_from + tun.min_granularity.saturating_sub(turn);
            (t.acct_from + t.rdelta(gap)).max(min_gran)
        });
        let asked = by_lead.map_or(by_slice, |l| l.min(by_slice));
        // ALPS: nothing happens before the hold ends, or a waiting task
        // reaches the wait limit.
        let hold_end = t.acct_from + t.hold.saturating_sub(turn);
        asked.max(self.next_starving().map_or(hold_end, |s| s.min(hold_end)))
    }

    /// At a tick: whether `check_preempt_tick` reschedules the running `t`.
    pub fn tick(&self, t: &Task, cores: u64, tun: &CfsTunables) -> bool {
        let ideal = self.slice(t, cores, tun);
        let turn = t.stats.cpu - t.turn_cpu;
        if turn > ideal {
            return true;
        }
        if turn < tun.min_granularity {
            return false;
        }
        self.tree
            .first()
            .is_some_and(|&(_, left, _, _)| t.vruntime - left > ideal as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{Attrs, CpuSet, MS, SEC};
    use proptest::prelude::*;

    fn task(nice: i8, class: Class) -> Task {
        let attrs = Attrs {
            nice,
            ..Attrs::normal(CpuSet::first(1)).with_class(class)
        };
        Task::of(attrs, 700_000)
    }

    /// A task whose nice changes while it waits: Linux's `reweight_entity`
    /// scales its lag and its relative deadline by old/new weight, and
    /// `place_entity` keeps the request (PLACE_REL_DEADLINE) instead of
    /// issuing a fresh one as a wakeup does.
    #[test]
    fn eevdf_reweights_a_moved_task_and_keeps_its_request() {
        let mut q = Eevdf::default();
        let mut other = task(0, Class::Normal);
        q.join(&mut other, 0, Join::New); // alone: V = 0, its vruntime 0
        let mut t = task(5, Class::Normal); // weight 335
        t.vlag = 3 * MS as i64;
        let moved = Moved {
            weight: 1024,
            deadline: 2 * MS as i64,
            vruntime: 0,
        };
        q.join(&mut t, 0, Join::Moved(moved));
        // vlag 3 ms · 1024/335 = 9.170 ms, then placed with (W + w)/W =
        // (1024 + 335)/1024: lag 12.171 ms, so v = 0 − 12.171 ms.
        let vlag = 3_000_000i64 * 1024 / 335;
        assert_eq!(t.vlag, vlag);
        assert_eq!(t.vruntime, -(vlag * (1024 + 335) / 1024));
        // The request: 2 ms · 1024/335 past the vruntime.
        assert_eq!(t.deadline - t.vruntime, 2_000_000 * 1024 / 335);
        // A wakeup would have issued a fresh one: the slice in virtual time.
        let mut w = task(5, Class::Normal);
        q.join(&mut w, 0, Join::Wake);
        assert_eq!(w.deadline - w.vruntime, w.vdelta(w.slice));
    }

    /// Legacy CFS renormalises a moved task against its new queue's
    /// `min_vruntime`, with no sleeper credit; a sleeper's credit is half the
    /// latency, a SCHED_IDLE one's half the minimum granularity.
    #[test]
    fn cfs_renormalises_a_moved_task_and_credits_idle_sleepers_less() {
        let tun = CfsTunables {
            latency: 24 * MS,
            min_granularity: 3 * MS,
            wakeup_granularity: 4 * MS,
        };
        let mut q = Cfs {
            min_vruntime: 100 * MS as i64,
            ..Cfs::default()
        };
        let mut t = task(0, Class::Normal);
        let moved = Moved {
            weight: 1024,
            deadline: 0,
            vruntime: -(50 * MS as i64),
        };
        q.join(&mut t, Join::Moved(moved), None, 1, &tun);
        assert_eq!(t.vruntime, 50 * MS as i64);
        for (class, credit) in [(Class::Normal, 12 * MS), (Class::Idle, 3 * MS / 2)] {
            let mut t = task(0, class);
            q.join(&mut t, Join::Wake, None, 1, &tun);
            assert_eq!(t.vruntime, (100 * MS - credit) as i64, "{class:?}");
        }
    }

    /// The ALPS kernel's queue with a 100 ms wait limit: by rank until a
    /// task has waited 100 ms, then the longest waiting first, marked
    /// starved; meanwhile the running task yields, its hold ends with the
    /// limit, and no wakeup preempts.
    #[test]
    fn alps_queue_runs_the_longest_waiting_once_it_reached_the_limit() {
        let mut q = Cfs::alps(Some(100 * MS));
        let mut tasks: Vec<Task> = (0..3u32)
            .map(|i| {
                let mut t = task(0, Class::Normal);
                (t.seq, t.rank, t.queued_at) = (i as u64, 3 - i, i as u64 * 10 * MS);
                t
            })
            .collect();
        for (slot, t) in tasks.iter().enumerate() {
            q.push(slot as u32, t);
        }
        let mut held = task(0, Class::Normal);
        (held.rank, held.hold, held.seq) = (0, 3_600 * MS, 9);
        // Rank first before the limit (slot 2 has rank 1)...
        assert!(!q.starving(99 * MS));
        assert_eq!(
            q.expiry(
                &held,
                1,
                &CfsTunables {
                    latency: 6 * MS,
                    min_granularity: MS,
                    wakeup_granularity: MS
                }
            ),
            100 * MS
        );
        assert!(q.keeps_core(99 * MS, &held));
        assert_eq!(q.pop(99 * MS, &mut tasks), Some(2));
        assert!(!tasks[2].starved);
        // ...then the one waiting since 0 (rank 3), though slot 1 ranks better.
        assert!(q.starving(100 * MS) && !q.keeps_core(100 * MS, &held));
        assert_eq!(q.pop(100 * MS, &mut tasks), Some(0));
        assert!(tasks[0].starved);
        // Slot 1 waits since 10 ms: it reaches the limit at 110 ms.
        assert!(!q.starving(109 * MS) && q.starving(110 * MS));
        assert_eq!(q.pop(110 * MS, &mut tasks), Some(1));
        assert_eq!((q.waiting(), q.pop(200 * MS, &mut tasks)), (0, None));
        // Without a limit, the paper's order: by rank, whatever the waits.
        let mut strict = Cfs::alps(None);
        for (slot, t) in tasks.iter().enumerate() {
            strict.push(slot as u32, t);
        }
        assert!(!strict.starving(10 * SEC));
        assert_eq!(strict.pop(10 * SEC, &mut tasks), Some(2));
    }

    proptest! {
        /// `threshold` is the boundary of `admits`: admitted up to it, not past.
        #[test]
        fn threshold_bounds_admits(
            vs in prop::collection::vec((-1i64 << 50..1 << 50, 1i64..90_000), 0..8),
            n_run in 0i64..4,
            shift in -(1i64 << 40)..1 << 40,
        ) {
            let weight: i64 = vs.iter().map(|v| v.1).sum();
            let sum = vs.iter().map(|&(v, w)| v as i128 * w as i128).sum::<i128>()
                + 1024 * (n_run as i128 * shift as i128);
            let e = Eligibility { sum, weight };
            let t = e.threshold();
            prop_assert!(e.admits(t));
            prop_assert!(t == i64::MAX || !e.admits(t + 1));
        }
    }
}
