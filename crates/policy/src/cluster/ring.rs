//! A consistent-hash ring over the servers (CH-RLU §4.2), with virtual
//! nodes and a fixed 64-bit hash, and the clockwise walk CH-RLU and CH-BL
//! forward along.
//!
//! 1. Server `s` owns [`Ring::vnodes`] points, point `v` at
//!    `hash64(SERVER_DOMAIN ^ (s << 32 | v))`.
//! 2. Function `f` hashes to `hash64(FUNCTION_DOMAIN ^ f)`; its **home** is
//!    the owner of the first point at or after that key, wrapping past
//!    `u64::MAX` to the lowest point.
//! 3. The walk goes on clockwise from the home's point and yields each
//!    physical server the first time one of its points comes up, so it
//!    yields every server exactly once.
//!
//! Points that collide (equal positions) are ordered by server then vnode,
//! so the ring is the same on every platform and in every run.

use faasched_model::FunctionId;
use faasched_model::cluster::ServerId;

/// Virtual nodes per server unless told otherwise. The paper names none
/// ("We use OpenWhisk's existing consistent hashing implementation", §5);
/// with k points a server's share of the ring varies by about 1/√k of the
/// mean, so 100 keeps the homes of 8–64 servers within about ±10% of even
/// while a walk still meets a different server at almost every step.
pub const DEFAULT_VNODES: u32 = 100;

/// What the SplitMix64 generator adds to its state each step (⌊2⁶⁴/φ⌋).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// Salt for the servers' points, so that server keys and function keys
/// (both small integers) never hash the same input.
const SERVER_DOMAIN: u64 = 0x5345_5256_4552_0000; // "SERVER"

/// Salt for the functions' keys on the ring.
const FUNCTION_DOMAIN: u64 = 0x4655_4e43_5249_4e47; // "FUNCRING"

/// A fixed 64-bit hash: one step of SplitMix64 (Steele, Lea, Flood,
/// OOPSLA'14) from state `x`, i.e. its finalizer applied to `x + γ`.
///
/// The paper asks for "any 5-independent hashing function" (§4.2) because
/// CH-BL's bounds (Mirrokni et al.) are proved for one drawn at random
/// from a 5-independent family. A fixed mixer is no such family, but the
/// keys here are small non-adversarial integers (server, vnode and function
/// ids), the finalizer is a bijection on 64 bits whose every output bit
/// depends on every input bit (it passes BigCrush as a generator), and what
/// the router needs from it is an even, uncorrelated spread of points and
/// keys that is identical on every platform and run, which std's
/// `RandomState` is not. The paper's own implementation reuses OpenWhisk's
/// hashing, which is not 5-independent either.
pub fn hash64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GOLDEN_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The position of point `vnode` of `server`.
pub fn server_point(server: ServerId, vnode: u32) -> u64 {
    hash64(SERVER_DOMAIN ^ (u64::from(server.0) << 32 | u64::from(vnode)))
}

/// The key of `f` on the ring.
pub fn function_key(f: FunctionId) -> u64 {
    hash64(FUNCTION_DOMAIN ^ u64::from(f.0))
}

/// A consistent-hash ring over servers `0..n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    /// Every point, sorted by (position, server, vnode).
    points: Vec<(u64, ServerId)>,
    servers: u32,
    vnodes: u32,
}

impl Ring {
    /// A ring over servers `0..servers`, each with `vnodes` points (at
    /// least one: a server with none would never be anyone's home nor on
    /// any walk; 0 counts as 1).
    pub fn new(servers: u32, vnodes: u32) -> Ring {
        let vnodes = vnodes.max(1);
        let mut points: Vec<(u64, ServerId, u32)> = (0..servers)
            .flat_map(|s| (0..vnodes).map(move |v| (server_point(ServerId(s), v), ServerId(s), v)))
            .collect();
        points.sort_unstable();
        Ring {
            points: points.into_iter().map(|(p, s, _)| (p, s)).collect(),
            servers,
            vnodes,
        }
    }

    /// How many servers it spans.
    pub fn servers(&self) -> u32 {
        self.servers
    }

    /// Points per server.
    pub fn vnodes(&self) -> u32 {
        self.vnodes
    }

    /// The index of the first point at or after `key`, wrapping to 0.
    fn start(&self, key: u64) -> usize {
        let i = self.points.partition_point(|&(p, _)| p < key);
        if i == self.points.len() { 0 } else { i }
    }

    /// The home of `f`: the owner of the first point clockwise of its key;
    /// `None` on a ring without servers.
    pub fn home(&self, f: FunctionId) -> Option<ServerId> {
        self.walk(f).next()
    }

    /// The servers clockwise from `f`'s key, each once, home first.
    pub fn walk(&self, f: FunctionId) -> Walk<'_> {
        self.walk_from(function_key(f))
    }

    /// The servers clockwise from `key`, each once.
    pub fn walk_from(&self, key: u64) -> Walk<'_> {
        Walk {
            ring: self,
            next: self.start(key),
            left: self.points.len(),
            seen: Seen::new(self.servers as usize),
        }
    }
}

/// Words of [`Seen`]'s inline bitset: clusters of up to 256 servers walk
/// without allocating.
const INLINE_WORDS: usize = 4;

/// The servers a walk has yielded, one bit each. A router walks at every
/// decision, usually a few steps, so the set lives inline (no allocation,
/// no zeroing of a server-sized buffer) unless the cluster is too large
/// for it.
#[derive(Clone, Debug)]
enum Seen {
    Inline([u64; INLINE_WORDS]),
    Heap(Vec<u64>),
}

impl Seen {
    /// None of `servers` seen.
    fn new(servers: usize) -> Seen {
        let words = servers.div_ceil(64);
        if words <= INLINE_WORDS {
            Seen::Inline([0; INLINE_WORDS])
        } else {
            Seen::Heap(vec![0; words])
        }
    }

    /// Marks `s` seen; whether it was not before.
    fn insert(&mut self, s: ServerId) -> bool {
        let words = match self {
            Seen::Inline(w) => &mut w[..],
            Seen::Heap(w) => &mut w[..],
        };
        let (word, bit) = (s.0 as usize / 64, 1u64 << (s.0 % 64));
        let fresh = words[word] & bit == 0;
        words[word] |= bit;
        fresh
    }
}

/// The clockwise walk of [`Ring::walk`]: distinct physical servers.
#[derive(Clone, Debug)]
pub struct Walk<'a> {
    ring: &'a Ring,
    /// The next point to look at.
    next: usize,
    /// Points not yet looked at.
    left: usize,
    /// Servers already yielded.
    seen: Seen,
}

impl Iterator for Walk<'_> {
    type Item = ServerId;

    fn next(&mut self) -> Option<ServerId> {
        while self.left > 0 {
            let (_, s) = self.ring.points[self.next];
            self.next = (self.next + 1) % self.ring.points.len();
            self.left -= 1;
            if self.seen.insert(s) {
                return Some(s);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash64_is_splitmix64() {
        // The first outputs of SplitMix64 seeded with 0, as its reference
        // implementation prints them: states γ, 2γ, 3γ.
        assert_eq!(hash64(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(hash64(GOLDEN_GAMMA), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(hash64(GOLDEN_GAMMA.wrapping_mul(2)), 0x06c4_5d18_8009_454f);
    }

    /// Two servers with two points each; positions computed by hand from
    /// the salted keys with the three SplitMix64 steps. Clockwise:
    /// s1v0 0x0c6b…, s0v0 0x4910…, s0v1 0xc3c1…, s1v1 0xe327….
    #[test]
    fn a_tiny_ring_by_hand() {
        let (s0, s1) = (ServerId(0), ServerId(1));
        assert_eq!(server_point(s0, 0), 0x4910_f1b4_b175_8a76);
        assert_eq!(server_point(s0, 1), 0xc3c1_2c47_e095_4458);
        assert_eq!(server_point(s1, 0), 0x0c6b_148a_c543_2aa6);
        assert_eq!(server_point(s1, 1), 0xe327_0b13_dbd8_265f);
        let ring = Ring::new(2, 2);
        let walk = |key: u64| ring.walk_from(key).collect::<Vec<_>>();
        // On a point: its owner first.
        assert_eq!(walk(0x0c6b_148a_c543_2aa6), [s1, s0]);
        // Just past s1v0: s0v0 is next.
        assert_eq!(walk(0x0c6b_148a_c543_2aa7), [s0, s1]);
        // Past s0v0: s0v1 (s0 again, then s1v1).
        assert_eq!(walk(0x4910_f1b4_b175_8a77), [s0, s1]);
        // Past s0v1: s1v1, and s0 after wrapping.
        assert_eq!(walk(0xc3c1_2c47_e095_4459), [s1, s0]);
        // Past the last point: wraps to s1v0.
        assert_eq!(walk(0xe327_0b13_dbd8_2660), [s1, s0]);
        assert_eq!(walk(0), [s1, s0]);
        // Function 7's key lies between s0v0 and s0v1: home s0.
        assert_eq!(function_key(FunctionId(7)), 0x62ed_6a20_5657_a6f0);
        assert_eq!(ring.home(FunctionId(7)), Some(s0));
        assert_eq!(ring.walk(FunctionId(7)).collect::<Vec<_>>(), [s0, s1]);
    }

    #[test]
    fn walks_meet_every_server_once_and_empty_rings_have_no_home() {
        let ring = Ring::new(5, 3);
        for f in 0..50 {
            let mut w: Vec<u32> = ring.walk(FunctionId(f)).map(|s| s.0).collect();
            assert_eq!(w[0], ring.home(FunctionId(f)).unwrap().0);
            w.sort_unstable();
            assert_eq!(w, [0, 1, 2, 3, 4]);
        }
        assert_eq!(Ring::new(0, 3).home(FunctionId(1)), None);
        assert_eq!(Ring::new(3, 0).vnodes(), 1);
    }

    #[test]
    fn walks_past_the_inline_bitset_meet_every_server_once() {
        // 256 servers fit the inline words, 257 and 300 do not.
        for n in [63, 64, 65, 256, 257, 300] {
            let ring = Ring::new(n, 2);
            let mut w: Vec<u32> = ring.walk(FunctionId(n)).map(|s| s.0).collect();
            w.sort_unstable();
            assert_eq!(w, (0..n).collect::<Vec<_>>(), "{n} servers");
        }
    }

    #[test]
    fn homes_spread_evenly_with_the_default_vnodes() {
        let ring = Ring::new(8, DEFAULT_VNODES);
        let mut count = [0u32; 8];
        for f in 0..8_000 {
            count[ring.home(FunctionId(f)).unwrap().0 as usize] += 1;
        }
        assert!(
            count.iter().all(|&c| (700..1_300).contains(&c)),
            "{count:?}"
        );
    }
}
