//! One server's containers within its memory, kept by a [`KeepAlive`]:
//! what the simulator's engine and a live node both hold, so that warm
//! starts, evictions and expiries follow one piece of code.

use super::{Container, ContainerId, FunctionProfile, KeepAlive};
use crate::{FunctionId, IdMap, Time};
use std::ops::DerefMut;

/// A container as the pool keeps it.
#[derive(Debug)]
struct Held {
    c: Container,
    /// It runs an invocation (else it is idle, its keep-alive's to keep).
    busy: bool,
    /// While idle: the idle container of its function that became idle
    /// just before it, and the one just after it (its neighbours on its
    /// function's stack, [`ContainerPool::idle`]).
    below: Option<ContainerId>,
    above: Option<ContainerId>,
}

/// A server's containers, busy and idle, within `memory_mb`; `K` is its
/// keep-alive policy (a `Box<dyn KeepAlive>` or a reference to one).
#[derive(Debug)]
pub struct ContainerPool<K> {
    memory_mb: u64,
    /// Memory of every container, busy or idle.
    used_mb: u64,
    /// Memory of the idle containers.
    idle_mb: u64,
    containers: IdMap<ContainerId, Held>,
    /// The top of each function's stack of idle containers: the most
    /// recently idle; the others hang below it through [`Held::below`].
    /// A stack linked through the containers allocates nothing when it
    /// empties and refills (as a warm start and the next finish do), and
    /// removes an evicted container from its middle in O(1).
    idle: IdMap<FunctionId, ContainerId>,
    keep: K,
}

impl<K> ContainerPool<K>
where
    K: DerefMut,
    K::Target: KeepAlive,
{
    /// An empty pool of `memory_mb` kept by `keep`.
    pub fn new(memory_mb: u64, keep: K) -> ContainerPool<K> {
        ContainerPool {
            memory_mb,
            used_mb: 0,
            idle_mb: 0,
            containers: IdMap::default(),
            idle: IdMap::default(),
            keep,
        }
    }

    /// The keep-alive policy.
    pub fn keep(&self) -> &K::Target {
        &self.keep
    }

    /// The keep-alive policy, to ask which idle containers expired.
    pub fn keep_mut(&mut self) -> &mut K::Target {
        &mut self.keep
    }

    /// The memory it has for containers.
    pub fn memory_mb(&self) -> u64 {
        self.memory_mb
    }

    /// Memory of every container, busy or idle.
    pub fn used_mb(&self) -> u64 {
        self.used_mb
    }

    /// Takes the most recently idle container of `f`, if any (a warm
    /// start).
    pub fn take_idle(&mut self, now: Time, f: FunctionId) -> Option<ContainerId> {
        let id = *self.idle.get(&f)?;
        match self.containers.get_mut(&id)?.below.take() {
            Some(b) => {
                self.idle.insert(f, b);
                if let Some(h) = self.containers.get_mut(&b) {
                    h.above = None;
                }
            }
            None => {
                self.idle.remove(&f);
            }
        }
        let held = self.containers.get_mut(&id)?;
        held.busy = true;
        held.c.last_used = now;
        self.idle_mb -= held.c.profile.memory_mb as u64;
        self.keep.on_reuse(now, &held.c);
        Some(id)
    }

    /// Evicts idle containers, as the keep-alive names them, until `need`
    /// MB more fit, telling `evicted` each one and its function; false if they
    /// cannot. Asks nothing when evicting every idle container would not
    /// free enough: the cache is not flushed for an invocation that cannot
    /// start now anyway. An error says how the keep-alive broke its
    /// contract.
    pub fn make_room(
        &mut self,
        now: Time,
        need: u64,
        mut evicted: impl FnMut(ContainerId, FunctionId),
    ) -> Result<bool, String> {
        if self.used_mb - self.idle_mb + need > self.memory_mb {
            return Ok(false);
        }
        while self.used_mb + need > self.memory_mb {
            let Some(id) = self.keep.victim(now) else {
                return Ok(false);
            };
            let f = self
                .remove_idle(id)
                .map_err(|what| format!("named container {} as its victim, {what}", id.0))?;
            evicted(id, f);
        }
        Ok(true)
    }

    /// Removes idle container `id` (evicted or expired): its function, or
    /// why it cannot go.
    pub fn remove_idle(&mut self, id: ContainerId) -> Result<FunctionId, String> {
        match self.containers.get(&id) {
            None => return Err("which the server does not hold".to_owned()),
            Some(h) if h.busy => return Err("which runs an invocation".to_owned()),
            Some(_) => {}
        }
        let Some(held) = self.containers.remove(&id) else {
            return Err("which the server does not hold".to_owned());
        };
        let f = held.c.profile.function;
        match held.above.and_then(|a| self.containers.get_mut(&a)) {
            Some(a) => a.below = held.below,
            None => {
                match held.below {
                    Some(b) => self.idle.insert(f, b),
                    None => self.idle.remove(&f),
                };
            }
        }
        if let Some(b) = held.below.and_then(|b| self.containers.get_mut(&b)) {
            b.above = held.above;
        }
        let mb = held.c.profile.memory_mb as u64;
        self.used_mb -= mb;
        self.idle_mb -= mb;
        Ok(f)
    }

    /// A new busy container `id` of `profile` (a cold start), once
    /// [`ContainerPool::make_room`] has made room for it.
    pub fn create(&mut self, now: Time, id: ContainerId, profile: FunctionProfile) {
        let c = Container {
            id,
            profile,
            created: now,
            last_used: now,
        };
        self.used_mb += profile.memory_mb as u64;
        debug_assert!(self.used_mb <= self.memory_mb, "make_room made room");
        self.keep.on_created(now, &c);
        self.containers.insert(
            id,
            Held {
                c,
                busy: true,
                below: None,
                above: None,
            },
        );
    }

    /// Container `id`'s invocation finished: it is idle. Its function, or
    /// `None` if it was not busy here.
    pub fn release(&mut self, now: Time, id: ContainerId) -> Option<FunctionId> {
        let held = self.containers.get(&id)?;
        if !held.busy {
            return None;
        }
        let f = held.c.profile.function;
        let below = self.idle.insert(f, id);
        if let Some(b) = below.and_then(|b| self.containers.get_mut(&b)) {
            b.above = Some(id);
        }
        let held = self.containers.get_mut(&id)?;
        held.busy = false;
        held.below = below;
        held.c.last_used = now;
        self.idle_mb += held.c.profile.memory_mb as u64;
        self.keep.on_idle(now, &held.c);
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Evicts the idle containers in the order they became idle, and
    /// records what it was told.
    #[derive(Default)]
    struct Fifo {
        idle: Vec<ContainerId>,
        told: Vec<String>,
    }

    impl KeepAlive for Fifo {
        fn name(&self) -> &str {
            "fifo"
        }
        fn on_created(&mut self, _now: Time, c: &Container) {
            self.told.push(format!("created {}", c.id.0));
        }
        fn on_idle(&mut self, _now: Time, c: &Container) {
            self.told.push(format!("idle {}", c.id.0));
            self.idle.push(c.id);
        }
        fn on_reuse(&mut self, _now: Time, c: &Container) {
            self.told.push(format!("reuse {}", c.id.0));
            self.idle.retain(|&i| i != c.id);
        }
        fn victim(&mut self, _now: Time) -> Option<ContainerId> {
            (!self.idle.is_empty()).then(|| self.idle.remove(0))
        }
    }

    fn profile(f: u32, memory_mb: u32) -> FunctionProfile {
        FunctionProfile {
            function: FunctionId(f),
            memory_mb,
            warm: 10,
            cold: 30,
        }
    }

    #[test]
    fn warm_starts_take_the_most_recently_idle_container_of_the_function() {
        let mut pool = ContainerPool::new(1_000, Box::new(Fifo::default()));
        for id in 0..3 {
            pool.create(0, ContainerId(id), profile(7, 100));
        }
        pool.create(0, ContainerId(9), profile(8, 100));
        for id in [0, 2, 1, 9] {
            assert!(pool.release(5, ContainerId(id)).is_some());
        }
        assert_eq!(pool.release(5, ContainerId(1)), None, "already idle");
        assert_eq!(pool.take_idle(6, FunctionId(7)), Some(ContainerId(1)));
        assert_eq!(pool.take_idle(6, FunctionId(7)), Some(ContainerId(2)));
        assert_eq!(pool.take_idle(6, FunctionId(7)), Some(ContainerId(0)));
        assert_eq!(pool.take_idle(6, FunctionId(7)), None);
        assert_eq!(pool.take_idle(6, FunctionId(8)), Some(ContainerId(9)));
        assert_eq!(pool.used_mb(), 400);
    }

    #[test]
    fn room_is_made_by_the_keep_alives_victims_and_never_from_busy_memory() {
        let mut pool = ContainerPool::new(300, Box::new(Fifo::default()));
        pool.create(0, ContainerId(0), profile(1, 100));
        pool.create(0, ContainerId(1), profile(2, 100));
        pool.create(0, ContainerId(2), profile(3, 100));
        let mut evicted = Vec::new();
        // Everything busy: no room, and the keep-alive is not asked.
        assert_eq!(pool.make_room(1, 100, |_, f| evicted.push(f)), Ok(false));
        pool.release(2, ContainerId(1));
        pool.release(3, ContainerId(0));
        // 150 MB fit once both idle ones go (100 MB stays busy): the first
        // to go idle goes first.
        assert_eq!(pool.make_room(4, 150, |_, f| evicted.push(f)), Ok(true));
        assert_eq!(evicted, [FunctionId(2), FunctionId(1)]);
        assert_eq!(pool.used_mb(), 100);
        // The evicted are gone: no warm start, and removing them again is
        // an error naming why.
        assert_eq!(pool.take_idle(5, FunctionId(2)), None);
        assert!(
            pool.remove_idle(ContainerId(1))
                .unwrap_err()
                .contains("does not hold")
        );
        assert!(
            pool.remove_idle(ContainerId(2))
                .unwrap_err()
                .contains("runs an invocation")
        );
        assert_eq!(
            pool.keep().told,
            ["created 0", "created 1", "created 2", "idle 1", "idle 0"]
        );
    }
}
