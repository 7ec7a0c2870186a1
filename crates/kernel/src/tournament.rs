//! A tournament tree over the cores: one key per core, each inner node
//! holding the minimum of its children, so the minimum of all is at the root.
//! Setting a core's key is an update in place of its leaf and its ancestors,
//! O(log cores), and nothing stale is ever left behind. The core timers keep
//! their pending decisions in one, of 64-bit keys (events.rs); SRPT keeps its
//! running tasks' remaining work in another, of 128-bit keys (oracle.rs).

use faasched_model::MAX_CPUS;

/// A key of a [`Tournament`]: an unsigned integer, compared without a
/// branch.
pub trait Key: Copy + Ord {
    /// The key of a core that has none: after every real key.
    const NONE: Self;

    /// The smaller of two keys. Which wins is a coin toss: a branch would
    /// mispredict, so the key is selected with conditional moves.
    fn least(a: Self, b: Self) -> Self;
}

impl Key for u64 {
    const NONE: u64 = u64::MAX;

    #[inline(always)]
    fn least(a: u64, b: u64) -> u64 {
        std::hint::select_unpredictable(a < b, a, b)
    }
}

impl Key for u128 {
    const NONE: u128 = u128::MAX;

    /// LLVM makes a branch of a 128-bit `min`, so each 64-bit half is
    /// selected.
    #[inline(always)]
    fn least(a: u128, b: u128) -> u128 {
        let a_wins = a < b;
        let half = |shift: u32| {
            let (a, b) = ((a >> shift) as u64, (b >> shift) as u64);
            std::hint::select_unpredictable(a_wins, a, b) as u128
        };
        half(64) << 64 | half(0)
    }
}

/// Nodes of the tree; indices are masked with `NODES - 1`, which is free and
/// spares bounds checks.
const NODES: usize = 2 * MAX_CPUS;

/// Leaves of the tree of a machine of up to this many cores (most); larger
/// ones get `MAX_CPUS`. Two fixed depths: see [`Tournament::climb`].
const SMALL: usize = 64;

/// Minimum of one key per core.
#[derive(Debug)]
pub struct Tournament<K: Key> {
    /// Leaves `width..2 × width` are the cores' keys, node `i < width` is the
    /// minimum of nodes `2i` and `2i + 1` (node 0 unused).
    nodes: Box<[K; NODES]>,
    /// Leaves: [`SMALL`] or `MAX_CPUS`.
    width: usize,
    /// Leaves in use: the cores.
    cores: usize,
}

impl<K: Key> Tournament<K> {
    /// A tree for `cores` cores (at most `MAX_CPUS`), every key
    /// [`Key::NONE`].
    pub fn new(cores: usize) -> Tournament<K> {
        assert!(cores <= MAX_CPUS, "{cores} cores");
        Tournament {
            nodes: Box::new([K::NONE; NODES]),
            width: if cores <= SMALL { SMALL } else { MAX_CPUS },
            cores,
        }
    }

    /// The smallest key ([`Key::NONE`] if every core has none).
    #[inline]
    pub fn min(&self) -> K {
        self.nodes[1]
    }

    /// Sets core `core`'s key. Inlined: the re-arm of a core's timer, its
    /// caller at every event, is then one call (-0.5% instructions).
    #[inline(always)]
    pub fn set(&mut self, core: u32, key: K) {
        if self.width == SMALL {
            self.climb::<{ SMALL.trailing_zeros() }>(core, key);
        } else {
            self.climb::<{ MAX_CPUS.trailing_zeros() }>(core, key);
        }
    }

    /// Sets core `core`'s key but not its ancestors': [`Tournament::settle`]
    /// must follow before the next [`Tournament::min`].
    pub fn set_leaf(&mut self, core: u32, key: K) {
        self.nodes[(self.width + core as usize) & (NODES - 1)] = key;
    }

    /// Recomputes every inner node above the cores' leaves, level by level:
    /// after many [`Tournament::set_leaf`]s, cheaper than a climb each (a
    /// node each instead of a path each).
    pub fn settle(&mut self) {
        let (mut lo, mut hi) = (self.width, self.width + self.cores);
        while lo > 1 {
            (lo, hi) = (lo / 2, hi.div_ceil(2));
            for i in lo..hi {
                let (left, right) = (self.nodes[2 * i], self.nodes[(2 * i + 1) & (NODES - 1)]);
                self.nodes[i] = K::least(left, right);
            }
        }
    }

    /// Sets leaf `core` and its `LEVELS` ancestors, the root the last: a
    /// fixed count, so that the loop unrolls into straight-line code (with
    /// conditional moves, see [`Key::least`]) that never tests for the root.
    #[inline]
    fn climb<const LEVELS: u32>(&mut self, core: u32, key: K) {
        let mut i = (self.width + core as usize) & (NODES - 1);
        let mut up = key;
        self.nodes[i] = up;
        for _ in 0..LEVELS {
            up = K::least(self.nodes[i ^ 1], up);
            i /= 2;
            self.nodes[i] = up;
        }
    }
}
