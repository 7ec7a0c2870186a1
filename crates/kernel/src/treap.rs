//! An arena treap ordered by `(deadline, seq)` and augmented with the minimum
//! vruntime of each subtree, the structure EEVDF needs: "the entity with the
//! earliest virtual deadline among those whose vruntime makes them eligible" in
//! O(log n). Linux keeps the same augmentation on its rbtree (`min_vruntime` of a
//! subtree, tree sorted by deadline since 6.9).
//!
//! Node priorities come from a hash of `seq`, so the shape, and with it every
//! simulation, is deterministic.

use crate::slab::Slab;

/// Index of the sentinel node standing for "no child": its subtree minimum is
/// `i64::MAX`, so recomputing a node's minimum needs no branch.
const NIL: u32 = 0;

/// Sort key: virtual deadline, then insertion sequence (a full tie-break).
pub type Key = (i64, u64);

/// A [`Key`] packed so that one integer comparison orders it: the deadline with
/// its sign bit flipped (so unsigned order is signed order) above the sequence.
fn pack((deadline, seq): Key) -> u128 {
    (((deadline as u64) ^ (1 << 63)) as u128) << 64 | seq as u128
}

#[derive(Clone, Debug)]
struct Node {
    key: u128,
    vruntime: i64,
    min_vruntime: i64,
    prio: u64,
    value: u32,
    left: u32,
    right: u32,
}

/// The treap. Values are task indices.
///
/// Insertion descends to where the new node's priority belongs and splits
/// only the subtree below; removal merges only the removed node's children.
/// Both touch O(log n) nodes, and their split/merge spines are O(1) expected.
#[derive(Debug)]
pub struct Treap {
    /// Node 0 is the [`NIL`] sentinel.
    nodes: Slab<Node>,
    root: u32,
    len: usize,
    /// Scratch for [`Treap::remove`]: the path from the root.
    path: Vec<u32>,
}

/// SplitMix64: a cheap, well-mixed hash for node priorities.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Default for Treap {
    fn default() -> Self {
        let sentinel = Node {
            key: 0,
            vruntime: i64::MAX,
            min_vruntime: i64::MAX,
            prio: 0,
            value: 0,
            left: NIL,
            right: NIL,
        };
        let mut nodes = Slab::default();
        let nil = nodes.insert(sentinel);
        debug_assert_eq!(nil, NIL, "the sentinel is the first node");
        Treap {
            nodes,
            root: NIL,
            len: 0,
            path: Vec::new(),
        }
    }
}

impl Treap {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Recomputes `n`'s subtree minimum from its children.
    fn update(&mut self, n: u32) {
        let node = &self.nodes[n as usize];
        let m = self.nodes[node.left as usize]
            .min_vruntime
            .min(self.nodes[node.right as usize].min_vruntime)
            .min(node.vruntime);
        self.nodes[n as usize].min_vruntime = m;
    }

    /// Points the link of `parent` (the root if [`NIL`]) on `key`'s side at `new`.
    fn relink(&mut self, parent: u32, key: u128, new: u32) {
        if parent == NIL {
            self.root = new;
        } else if key < self.nodes[parent as usize].key {
            self.nodes[parent as usize].left = new;
        } else {
            self.nodes[parent as usize].right = new;
        }
    }

    /// Splits `t` into keys `< key` and keys `>= key`.
    fn split(&mut self, t: u32, key: u128) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.nodes[t as usize].key < key {
            let (l, r) = self.split(self.nodes[t as usize].right, key);
            self.nodes[t as usize].right = l;
            self.update(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.nodes[t as usize].left, key);
            self.nodes[t as usize].left = r;
            self.update(t);
            (l, t)
        }
    }

    /// Joins `a` and `b`, every key of `a` below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.update(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.update(b);
            b
        }
    }

    /// Inserts `value` under `key` with its vruntime. Keys must be unique.
    pub fn insert(&mut self, key: Key, vruntime: i64, value: u32) {
        let key = pack(key);
        let prio = mix(key as u64);
        // Descend while the nodes outrank the new one; it joins each of their
        // subtrees, so their minima can be lowered on the way.
        let (mut parent, mut t) = (NIL, self.root);
        while t != NIL && self.nodes[t as usize].prio > prio {
            let node = &mut self.nodes[t as usize];
            node.min_vruntime = node.min_vruntime.min(vruntime);
            parent = t;
            t = if key < node.key {
                node.left
            } else {
                node.right
            };
        }
        let (left, right) = self.split(t, key);
        let node = Node {
            key,
            vruntime,
            min_vruntime: vruntime,
            prio,
            value,
            left,
            right,
        };
        let n = self.nodes.insert(node);
        self.update(n);
        self.relink(parent, key, n);
        self.len += 1;
    }

    /// Removes the entry under `key`; returns its value if it was present.
    pub fn remove(&mut self, key: Key) -> Option<u32> {
        let key = pack(key);
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let mut t = self.root;
        while t != NIL && self.nodes[t as usize].key != key {
            path.push(t);
            let node = &self.nodes[t as usize];
            t = if key < node.key {
                node.left
            } else {
                node.right
            };
        }
        let found = (t != NIL).then(|| {
            let node = &self.nodes[t as usize];
            let (value, left, right) = (node.value, node.left, node.right);
            let merged = self.merge(left, right);
            self.relink(path.last().copied().unwrap_or(NIL), key, merged);
            // Fix the minima above, up to the first one that does not change.
            for &p in path.iter().rev() {
                let old = self.nodes[p as usize].min_vruntime;
                self.update(p);
                if self.nodes[p as usize].min_vruntime == old {
                    break;
                }
            }
            self.nodes.release(t);
            self.len -= 1;
            value
        });
        self.path = path;
        found
    }

    /// The entry with the smallest key. Returns `(key, vruntime, value)`.
    pub fn first(&self) -> Option<(Key, i64, u32)> {
        let mut n = self.root;
        if n == NIL {
            return None;
        }
        while self.nodes[n as usize].left != NIL {
            n = self.nodes[n as usize].left;
        }
        Some(self.entry(n))
    }

    fn entry(&self, n: u32) -> (Key, i64, u32) {
        let node = &self.nodes[n as usize];
        let deadline = ((node.key >> 64) as u64 ^ (1 << 63)) as i64;
        ((deadline, node.key as u64), node.vruntime, node.value)
    }

    /// The entry with the smallest key among those whose vruntime satisfies
    /// `eligible`, which must be monotone (true for every vruntime below some
    /// threshold, false above). Returns `(key, vruntime, value)`.
    pub fn first_eligible(&self, eligible: impl Fn(i64) -> bool) -> Option<(Key, i64, u32)> {
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if node.left != NIL && eligible(self.nodes[node.left as usize].min_vruntime) {
                n = node.left;
            } else if eligible(node.vruntime) {
                return Some(self.entry(n));
            } else {
                n = node.right;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a naive O(n) reference: insert/remove at random, then the
        /// earliest eligible deadline for a random threshold.
        #[test]
        fn matches_naive_reference(ops in prop::collection::vec((0i64..50, -20i64..20, any::<bool>()), 1..200),
                                   thr in -25i64..25) {
            let mut t = Treap::default();
            let mut naive: Vec<(Key, i64, u32)> = Vec::new();
            for (seq, (d, v, remove)) in ops.into_iter().enumerate() {
                if remove && !naive.is_empty() {
                    let victim = naive.remove(seq % naive.len());
                    prop_assert_eq!(t.remove(victim.0), Some(victim.2));
                } else {
                    let key = (d, seq as u64);
                    t.insert(key, v, seq as u32);
                    naive.push((key, v, seq as u32));
                }
                prop_assert_eq!(t.len(), naive.len());
            }
            let want = naive.iter().filter(|e| e.1 <= thr).min_by_key(|e| e.0).copied();
            prop_assert_eq!(t.first_eligible(|v| v <= thr), want);
            let first = naive.iter().min_by_key(|e| e.0).copied();
            prop_assert_eq!(t.first_eligible(|_| true), first);
        }

        /// The same with negative deadlines, removals by key (present or not),
        /// and every query checked after every operation.
        #[test]
        fn matches_naive_reference_at_every_step(
            ops in prop::collection::vec((-30i64..30, -20i64..20, 0u8..3, any::<u16>()), 1..200),
            thr in -25i64..25,
        ) {
            let mut t = Treap::default();
            let mut naive: Vec<(Key, i64, u32)> = Vec::new();
            for (seq, (d, v, op, pick)) in ops.into_iter().enumerate() {
                match op {
                    0 if !naive.is_empty() => {
                        let victim = naive.remove(pick as usize % naive.len());
                        prop_assert_eq!(t.remove(victim.0), Some(victim.2));
                    }
                    1 => prop_assert_eq!(t.remove((d, pick as u64)), None),
                    _ => {
                        let key = (d, 1 << 16 | seq as u64);
                        t.insert(key, v, seq as u32);
                        naive.push((key, v, seq as u32));
                    }
                }
                prop_assert_eq!(t.len(), naive.len());
                let first = naive.iter().min_by_key(|e| e.0).copied();
                prop_assert_eq!(t.first(), first);
                let want = naive.iter().filter(|e| e.1 <= thr).min_by_key(|e| e.0).copied();
                prop_assert_eq!(t.first_eligible(|v| v <= thr), want);
            }
        }
    }

    #[test]
    fn removing_a_missing_key_is_none() {
        let mut t = Treap::default();
        t.insert((5, 1), 0, 7);
        assert_eq!(t.remove((5, 2)), None);
        assert_eq!(t.remove((5, 1)), Some(7));
        assert_eq!(t.len(), 0);
        assert_eq!(t.first_eligible(|_| true), None);
    }
}
