//! Keep-alive policies, one per server: GreedyDual (FaasCache, Fuerst &
//! Sharma ASPLOS'21; the invokers' policy in CH-RLU §5), OpenWhisk's
//! 10-minute TTL (the OW+TTL baseline, §6.1) and LRU (Ilúvatar's default).
//!
//! Each sees a container's life through the [`KeepAlive`] callbacks and
//! keeps only what it needs to name a victim; the engine owns memory. A
//! container the policy never heard created (no `on_created`) is adopted
//! at its first `on_idle` or `on_reuse`, so a missed callback costs
//! accuracy, never a panic.

use std::collections::{BTreeMap, BTreeSet};

use faasched_model::cluster::{Container, ContainerId, KeepAlive};
use faasched_model::{FunctionId, IdMap, MS, Nanos, SEC, Time};

use crate::BadParam;

/// Idle containers, least recently used first; ties to the lower id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct IdleLru {
    last_used: BTreeMap<ContainerId, Time>,
    order: BTreeSet<(Time, ContainerId)>,
}

impl IdleLru {
    fn insert(&mut self, id: ContainerId, last_used: Time) {
        self.remove(id);
        self.last_used.insert(id, last_used);
        self.order.insert((last_used, id));
    }

    fn remove(&mut self, id: ContainerId) -> bool {
        match self.last_used.remove(&id) {
            Some(t) => self.order.remove(&(t, id)),
            None => false,
        }
    }

    fn pop_oldest(&mut self) -> Option<ContainerId> {
        let (_, id) = self.order.pop_first()?;
        self.last_used.remove(&id);
        Some(id)
    }
}

/// Least recently used: the victim is the idle container whose last
/// invocation finished longest ago (ties to the lower id). Containers stay
/// until memory is needed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lru {
    idle: IdleLru,
}

impl Lru {
    /// The policy; it has no parameters.
    pub fn new() -> Lru {
        Lru::default()
    }
}

impl KeepAlive for Lru {
    fn name(&self) -> &str {
        "lru"
    }

    fn on_idle(&mut self, _now: Time, c: &Container) {
        self.idle.insert(c.id, c.last_used);
    }

    fn on_reuse(&mut self, _now: Time, c: &Container) {
        self.idle.remove(c.id);
    }

    fn victim(&mut self, _now: Time) -> Option<ContainerId> {
        self.idle.pop_oldest()
    }
}

/// OpenWhisk's keep-alive time: 10 minutes idle (the OW+TTL baseline of
/// §6.1; OpenWhisk's `idleContainer` default).
pub const TTL: Nanos = 600 * SEC;

/// Time to live: an idle container expires `ttl` after it became idle.
///
/// When a cold start needs memory before anything expired, it evicts the
/// least recently used idle container, as OpenWhisk's `ContainerPool.remove`
/// does (free warm containers by oldest `lastUsed`), so a full server can
/// still start containers. OpenWhisk evicts only if the free containers
/// together would free enough memory (else it buffers the activation); the
/// engine here knows the memory and stops asking once enough is free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ttl {
    ttl: Nanos,
    idle: IdleLru,
    /// Expiry of each idle container.
    expiry: BTreeMap<ContainerId, Time>,
    /// The same, ordered by (expiry, id).
    by_expiry: BTreeSet<(Time, ContainerId)>,
}

impl Ttl {
    /// OpenWhisk's 10-minute TTL ([`TTL`]).
    pub fn new() -> Ttl {
        Ttl::with_ttl(TTL).expect("the default TTL is above 0")
    }

    /// A TTL of `ttl`, or an error if it is 0 (table `ttl`).
    pub fn with_ttl(ttl: Nanos) -> Result<Ttl, BadParam> {
        BadParam::require(
            ttl > 0,
            "ttl",
            "ttl_ms",
            format!("{} ms", ttl / MS),
            "above 0",
        )?;
        Ok(Ttl {
            ttl,
            idle: IdleLru::default(),
            expiry: BTreeMap::new(),
            by_expiry: BTreeSet::new(),
        })
    }

    /// Forgets idle container `id`.
    fn forget(&mut self, id: ContainerId) {
        self.idle.remove(id);
        if let Some(t) = self.expiry.remove(&id) {
            self.by_expiry.remove(&(t, id));
        }
    }
}

impl Default for Ttl {
    fn default() -> Ttl {
        Ttl::new()
    }
}

impl KeepAlive for Ttl {
    fn name(&self) -> &str {
        "ttl"
    }

    fn on_idle(&mut self, now: Time, c: &Container) {
        self.forget(c.id);
        let at = now.saturating_add(self.ttl);
        self.idle.insert(c.id, c.last_used);
        self.expiry.insert(c.id, at);
        self.by_expiry.insert((at, c.id));
    }

    fn on_reuse(&mut self, _now: Time, c: &Container) {
        self.forget(c.id);
    }

    fn victim(&mut self, _now: Time) -> Option<ContainerId> {
        let id = self.idle.pop_oldest()?;
        self.forget(id);
        Some(id)
    }

    fn next_expiry(&self) -> Option<Time> {
        self.by_expiry.first().map(|&(t, _)| t)
    }

    fn expired(&mut self, now: Time, out: &mut Vec<ContainerId>) {
        while let Some(&(t, id)) = self.by_expiry.first() {
            if t > now {
                break;
            }
            self.forget(id);
            out.push(id);
        }
    }
}

/// One live container, as GreedyDual tracks it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Live {
    /// Its function's slot in [`GreedyDual::functions`]: the function it
    /// was first heard of with.
    function: u32,
    /// Invocations it has run (FaasCache's per-container frequency).
    uses: u64,
    /// Its index in [`GreedyDual::idle`] while idle.
    idle: Option<u32>,
}

/// One function with live containers on this server.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Function {
    id: FunctionId,
    /// Σ uses over its live containers.
    freq: u64,
    /// Its containers' priority, set at its latest hit or miss.
    priority: f64,
    /// Its live containers.
    live: u32,
}

/// An idle container, as the victim scan reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Idle {
    id: ContainerId,
    /// Its function's slot.
    function: u32,
    last_used: Time,
}

/// GreedyDual keep-alive (FaasCache eq. 1; Greedy-Dual-Size-Frequency):
/// every container of function f has priority
///
/// ```text
/// clock + freq(f) × cost(f) / size(f)
/// ```
///
/// recomputed for all of f's containers at each hit (warm start) or miss
/// (cold start) of f; the victim is the idle container with the lowest
/// priority (ties: older `last_used`, then lower id), and evicting it sets
/// the clock to its priority, which ages every container not used since.
///
/// 1. cost = cold − warm in ms (the cold start a hit saves), size = memory
///    in MB (at least 1), as faascache-sim's `calc_priority`.
/// 2. freq(f) = the invocations run by f's containers now live on this
///    server, as faascache-sim sums its containers' counts: evicting a
///    container takes its count away, and f's frequency starts from 0
///    once none of its containers is left.
/// 3. The clock never goes back: an idle container whose priority was set
///    before a later eviction raised the clock (possible when the engine
///    names victims after `on_created`, or for containers busy during an
///    eviction) leaves the clock where it is when evicted.
///
/// A hit changes the priority of every container of its function, so no
/// order over containers survives it; `victim` instead scans a dense array
/// of the idle containers, each naming its function's record by index:
/// O(idle) per eviction, a few instructions per container, small next to
/// a cold start. Containers and functions are found by id through
/// [`IdMap`]s (deterministic hashing), and function records are reused
/// through a free list, so the steady state allocates nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GreedyDual {
    clock: f64,
    live: IdMap<ContainerId, Live>,
    /// Function records by slot; a slot on `free` is unused.
    functions: Vec<Function>,
    free: Vec<u32>,
    /// The slot of each function with a live container.
    slots: IdMap<FunctionId, u32>,
    /// Idle containers, in no order.
    idle: Vec<Idle>,
}

impl GreedyDual {
    /// The policy, clock at 0; it has no parameters.
    pub fn new() -> GreedyDual {
        GreedyDual::default()
    }

    /// The clock: the priority of the latest victim.
    pub fn clock(&self) -> f64 {
        self.clock
    }

    /// The priority of `f`'s containers, if any is live.
    pub fn priority(&self, f: FunctionId) -> Option<f64> {
        self.slots
            .get(&f)
            .map(|&k| self.functions[k as usize].priority)
    }

    /// The slot of `f`'s record, made if it has none.
    fn slot(&mut self, f: FunctionId) -> u32 {
        if let Some(&k) = self.slots.get(&f) {
            return k;
        }
        let record = Function {
            id: f,
            freq: 0,
            priority: 0.0,
            live: 0,
        };
        let k = match self.free.pop() {
            Some(k) => {
                self.functions[k as usize] = record;
                k
            }
            None => {
                self.functions.push(record);
                (self.functions.len() - 1) as u32
            }
        };
        self.slots.insert(f, k);
        k
    }

    /// Takes entry `i` out of the idle array, and repoints the entry moved
    /// into its place.
    fn unidle(&mut self, i: u32) -> Idle {
        let gone = self.idle.swap_remove(i as usize);
        if let Some(moved) = self.idle.get(i as usize)
            && let Some(l) = self.live.get_mut(&moved.id)
        {
            l.idle = Some(i);
        }
        gone
    }

    /// One more invocation of `c`'s function in `c`: a hit or a miss.
    fn run(&mut self, c: &Container) {
        let k = match self.live.get(&c.id) {
            Some(l) => l.function,
            None => self.slot(c.profile.function),
        };
        let live = self.live.entry(c.id).or_insert(Live {
            function: k,
            uses: 0,
            idle: None,
        });
        let fresh = live.uses == 0;
        live.uses += 1;
        if let Some(i) = live.idle.take() {
            self.unidle(i);
        }
        let f = &mut self.functions[k as usize];
        if fresh {
            f.live += 1;
        }
        f.freq += 1;
        let cost_ms = c.profile.cold_extra() as f64 / MS as f64;
        let size = f64::from(c.profile.memory_mb.max(1));
        f.priority = self.clock + f.freq as f64 * cost_ms / size;
    }
}

impl KeepAlive for GreedyDual {
    fn name(&self) -> &str {
        "greedy-dual"
    }

    fn on_created(&mut self, _now: Time, c: &Container) {
        self.run(c);
    }

    fn on_idle(&mut self, _now: Time, c: &Container) {
        if !self.live.contains_key(&c.id) {
            self.run(c);
        }
        let Some(live) = self.live.get_mut(&c.id) else {
            return;
        };
        match live.idle {
            Some(i) => self.idle[i as usize].last_used = c.last_used,
            None => {
                live.idle = Some(self.idle.len() as u32);
                self.idle.push(Idle {
                    id: c.id,
                    function: live.function,
                    last_used: c.last_used,
                });
            }
        }
    }

    fn on_reuse(&mut self, _now: Time, c: &Container) {
        self.run(c);
    }

    fn victim(&mut self, _now: Time) -> Option<ContainerId> {
        let functions = &self.functions;
        let (i, priority) = self
            .idle
            .iter()
            .enumerate()
            .map(|(i, e)| {
                (
                    functions[e.function as usize].priority,
                    e.last_used,
                    e.id,
                    i,
                )
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)))
            .map(|(p, _, _, i)| (i as u32, p))?;
        let gone = self.unidle(i);
        let uses = self.live.remove(&gone.id).map_or(0, |l| l.uses);
        let f = &mut self.functions[gone.function as usize];
        f.freq = f.freq.saturating_sub(uses);
        f.live = f.live.saturating_sub(1);
        if f.live == 0 {
            self.slots.remove(&f.id);
            self.free.push(gone.function);
        }
        self.clock = self.clock.max(priority);
        Some(gone.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testkit::profile;
    use faasched_model::cluster::FunctionProfile;
    use proptest::prelude::*;

    fn container(id: u64, p: FunctionProfile, last_used: Time) -> Container {
        Container {
            id: ContainerId(id),
            profile: p,
            created: 0,
            last_used,
        }
    }

    /// Evicts until none is idle.
    fn drain(k: &mut impl KeepAlive, now: Time) -> Vec<u64> {
        std::iter::from_fn(|| k.victim(now)).map(|c| c.0).collect()
    }

    #[test]
    fn greedy_dual_priorities_by_hand() {
        // cost/size: A 200 ms / 100 MB = 2, B 50 / 50 = 1, C 100 / 200 = 0.5.
        let a = profile(1, 100, 100 * MS, 300 * MS);
        let b = profile(2, 50, 10 * MS, 60 * MS);
        let c = profile(3, 200, 0, 100 * MS);
        let (fa, fb, fc) = (a.function, b.function, c.function);
        let mut gd = GreedyDual::new();
        assert_eq!(gd.name(), "greedy-dual");
        gd.on_created(1, &container(1, a, 1)); // A: 0 + 1 × 2 = 2
        gd.on_created(2, &container(2, b, 2)); // B: 0 + 1 × 1 = 1
        assert_eq!((gd.priority(fa), gd.priority(fb)), (Some(2.0), Some(1.0)));
        gd.on_idle(3, &container(1, a, 3));
        gd.on_idle(4, &container(2, b, 4));
        gd.on_reuse(5, &container(1, a, 5)); // A: 0 + 2 × 2 = 4
        gd.on_idle(6, &container(1, a, 6));
        assert_eq!(gd.priority(fa), Some(4.0));
        // Room for C: B (1) goes before A (4); the clock becomes 1.
        assert_eq!(gd.victim(7), Some(ContainerId(2)));
        assert_eq!((gd.clock(), gd.priority(fb)), (1.0, None));
        gd.on_created(7, &container(3, c, 7)); // C: 1 + 1 × 0.5 = 1.5
        gd.on_created(8, &container(4, b, 8)); // B anew: 1 + 1 × 1 = 2
        assert_eq!((gd.priority(fc), gd.priority(fb)), (Some(1.5), Some(2.0)));
        gd.on_idle(9, &container(3, c, 9));
        gd.on_idle(10, &container(4, b, 10));
        assert_eq!(gd.victim(11), Some(ContainerId(3))); // C 1.5; clock 1.5
        gd.on_reuse(11, &container(4, b, 11)); // B: 1.5 + 2 × 1 = 3.5
        gd.on_idle(12, &container(4, b, 12));
        assert_eq!(gd.priority(fb), Some(3.5));
        assert_eq!(gd.victim(13), Some(ContainerId(4))); // B 3.5 < A 4
        assert_eq!(gd.victim(13), Some(ContainerId(1)));
        assert_eq!((gd.clock(), gd.victim(14)), (4.0, None));
    }

    #[test]
    fn greedy_dual_frequency_sums_live_containers_and_ties_go_to_the_older() {
        let a = profile(1, 100, 0, 100 * MS); // cost/size 1
        let mut gd = GreedyDual::new();
        gd.on_created(0, &container(1, a, 0)); // freq 1
        gd.on_created(0, &container(2, a, 0)); // freq 2
        gd.on_idle(5, &container(2, a, 5));
        gd.on_idle(6, &container(1, a, 6));
        assert_eq!(gd.priority(a.function), Some(2.0));
        // Same priority: the older last_used (container 2) goes first.
        assert_eq!(gd.victim(7), Some(ContainerId(2))); // clock 2
        // Container 2's one run leaves with it: freq 1 + this hit = 2.
        gd.on_reuse(8, &container(1, a, 8));
        assert_eq!(gd.priority(a.function), Some(2.0 + 2.0));
        // A busy container is never a victim.
        assert_eq!(gd.victim(9), None);
        // An unknown container turning idle is adopted.
        gd.on_idle(10, &container(9, a, 10));
        assert_eq!(gd.victim(11), Some(ContainerId(9)));
    }

    #[test]
    fn greedy_dual_clock_never_goes_back() {
        let low = profile(1, 200, 0, 100 * MS); // cost/size 0.5
        let high = profile(2, 100, 0, 100 * MS); // cost/size 1
        let mut gd = GreedyDual::new();
        gd.on_created(0, &container(1, low, 0)); // 0.5, busy
        gd.on_created(0, &container(2, high, 0)); // 1
        gd.on_idle(1, &container(2, high, 1));
        assert_eq!(gd.victim(2), Some(ContainerId(2)));
        assert_eq!(gd.clock(), 1.0);
        // Container 1's priority, 0.5, predates the clock of 1.
        gd.on_idle(3, &container(1, low, 3));
        assert_eq!(gd.victim(4), Some(ContainerId(1)));
        assert_eq!(gd.clock(), 1.0);
    }

    /// GreedyDual as first written: ordered maps, and a victim scan over
    /// every live container. The reference the dense version must match.
    #[derive(Default)]
    struct Reference {
        clock: f64,
        /// Container → (function, uses, last_used while idle).
        live: BTreeMap<ContainerId, (FunctionId, u64, Option<Time>)>,
        /// Function → (freq, priority, live containers).
        functions: BTreeMap<FunctionId, (u64, f64, u32)>,
    }

    impl Reference {
        fn run(&mut self, c: &Container) {
            let l = self
                .live
                .entry(c.id)
                .or_insert((c.profile.function, 0, None));
            let fresh = l.1 == 0;
            l.1 += 1;
            l.2 = None;
            let f = self
                .functions
                .entry(c.profile.function)
                .or_insert((0, 0.0, 0));
            f.2 += u32::from(fresh);
            f.0 += 1;
            let cost_ms = c.profile.cold_extra() as f64 / MS as f64;
            let size = f64::from(c.profile.memory_mb.max(1));
            f.1 = self.clock + f.0 as f64 * cost_ms / size;
        }

        fn on_idle(&mut self, c: &Container) {
            if !self.live.contains_key(&c.id) {
                self.run(c);
            }
            if let Some(l) = self.live.get_mut(&c.id) {
                l.2 = Some(c.last_used);
            }
        }

        fn victim(&mut self) -> Option<ContainerId> {
            let (p, _, id) = self
                .live
                .iter()
                .filter_map(|(&id, l)| Some((self.functions[&l.0].1, l.2?, id)))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)))?;
            let (f, uses, _) = self.live.remove(&id)?;
            let rec = self.functions.get_mut(&f)?;
            rec.0 = rec.0.saturating_sub(uses);
            rec.2 -= 1;
            if rec.2 == 0 {
                self.functions.remove(&f);
            }
            self.clock = self.clock.max(p);
            Some(id)
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// A warm start in an idle container, or a cold start in a new one.
        Start(u64),
        /// A running container's invocation ends.
        Idle(u64),
        Victim,
    }

    proptest! {
        #[test]
        fn greedy_dual_evicts_as_the_reference_does(
            ops in proptest::collection::vec(
                prop_oneof![
                    3 => (0..24u64).prop_map(Op::Start),
                    3 => (0..24u64).prop_map(Op::Idle),
                    2 => Just(Op::Victim),
                ],
                0..300,
            )
        ) {
            // Container c holds function c % 5; memories and costs differ,
            // and functions 3 and 4 tie on cost over size.
            let profiles = [
                profile(0, 100, 0, 100 * MS),
                profile(1, 50, 10 * MS, 60 * MS),
                profile(2, 200, 0, 100 * MS),
                profile(3, 128, 5 * MS, 261 * MS),
                profile(4, 64, 0, 128 * MS),
            ];
            let mut gd = GreedyDual::new();
            let mut reference = Reference::default();
            // Containers alive: whether each is busy.
            let mut state: BTreeMap<u64, bool> = BTreeMap::new();
            for (now, op) in (1..).zip(ops) {
                match op {
                    Op::Start(id) => {
                        let c = container(id, profiles[(id % 5) as usize], now);
                        match state.get(&id) {
                            Some(true) => continue,
                            Some(false) => gd.on_reuse(now, &c),
                            None => gd.on_created(now, &c),
                        }
                        reference.run(&c);
                        state.insert(id, true);
                    }
                    Op::Idle(id) => {
                        if state.get(&id) != Some(&true) {
                            continue;
                        }
                        let c = container(id, profiles[(id % 5) as usize], now);
                        gd.on_idle(now, &c);
                        reference.on_idle(&c);
                        state.insert(id, false);
                    }
                    Op::Victim => {
                        let v = gd.victim(now);
                        prop_assert_eq!(v, reference.victim());
                        if let Some(v) = v {
                            state.remove(&v.0);
                        }
                    }
                }
                prop_assert_eq!(gd.clock().to_bits(), reference.clock.to_bits());
                for p in &profiles {
                    let f = p.function;
                    prop_assert_eq!(
                        gd.priority(f).map(f64::to_bits),
                        reference.functions.get(&f).map(|r| r.1.to_bits())
                    );
                }
            }
        }
    }

    #[test]
    fn ttl_expires_ten_minutes_after_idle_and_evicts_lru_when_asked() {
        let a = profile(1, 100, 0, 100 * MS);
        let mut t = Ttl::new();
        assert_eq!(t.name(), "ttl");
        t.on_created(0, &container(1, a, 0));
        t.on_idle(SEC, &container(1, a, SEC));
        t.on_idle(2 * SEC, &container(2, a, 2 * SEC));
        t.on_idle(3 * SEC, &container(3, a, 3 * SEC));
        assert_eq!(t.next_expiry(), Some(SEC + TTL));
        // Container 2 is reused and idle again at 100 s.
        t.on_reuse(4 * SEC, &container(2, a, 4 * SEC));
        t.on_idle(100 * SEC, &container(2, a, 100 * SEC));
        let mut out = Vec::new();
        t.expired(SEC + TTL - 1, &mut out);
        assert!(out.is_empty());
        t.expired(3 * SEC + TTL, &mut out);
        assert_eq!(out, [ContainerId(1), ContainerId(3)]);
        assert_eq!(t.next_expiry(), Some(100 * SEC + TTL));
        // Memory needed before it expires: evicted all the same.
        assert_eq!(drain(&mut t, 200 * SEC), [2]);
        assert_eq!(t.next_expiry(), None);
        let e = Ttl::with_ttl(0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "parameter `ttl.ttl_ms` is 0 ms, but must be above 0"
        );
    }

    #[test]
    fn lru_evicts_the_least_recently_used_idle_container() {
        let a = profile(1, 100, 0, 100 * MS);
        let mut l = Lru::new();
        assert_eq!(l.name(), "lru");
        l.on_idle(5, &container(1, a, 5));
        l.on_idle(3, &container(2, a, 3));
        l.on_idle(3, &container(3, a, 3));
        l.on_idle(7, &container(4, a, 7));
        l.on_reuse(8, &container(4, a, 8));
        assert_eq!(drain(&mut l, 9), [2, 3, 1]);
    }
}
