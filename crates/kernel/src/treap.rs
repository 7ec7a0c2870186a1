//! An arena treap ordered by `(deadline, seq)` and augmented with the minimum
//! vruntime of each subtree, the structure EEVDF needs: "the entity with the
//! earliest virtual deadline among those whose vruntime makes them eligible" in
//! O(log n). Linux keeps the same augmentation on its rbtree (`min_vruntime` of a
//! subtree, tree sorted by deadline since 6.9).
//!
//! Node priorities come from a hash of `seq`, so the shape, and with it every
//! simulation, is deterministic.

const NIL: u32 = u32::MAX;

/// Sort key: virtual deadline, then insertion sequence (a full tie-break).
pub type Key = (i64, u64);

#[derive(Clone, Debug)]
struct Node {
    key: Key,
    vruntime: i64,
    min_vruntime: i64,
    value: u32,
    prio: u64,
    left: u32,
    right: u32,
}

/// The treap. Values are task indices.
#[derive(Debug)]
pub struct Treap {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    len: usize,
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
        Treap {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            len: 0,
        }
    }
}

impl Treap {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    fn min_v(&self, n: u32) -> i64 {
        if n == NIL {
            i64::MAX
        } else {
            self.nodes[n as usize].min_vruntime
        }
    }

    fn update(&mut self, n: u32) {
        let (l, r) = {
            let node = &self.nodes[n as usize];
            (node.left, node.right)
        };
        let m = self.min_v(l).min(self.min_v(r));
        let node = &mut self.nodes[n as usize];
        node.min_vruntime = node.vruntime.min(m);
    }

    /// Splits `t` into keys `< key` and keys `>= key`.
    fn split(&mut self, t: u32, key: Key) -> (u32, u32) {
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
        let node = Node {
            key,
            vruntime,
            min_vruntime: vruntime,
            value,
            prio: mix(key.1),
            left: NIL,
            right: NIL,
        };
        let n = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let (l, r) = self.split(self.root, key);
        let l = self.merge(l, n);
        self.root = self.merge(l, r);
        self.len += 1;
    }

    /// Removes the entry under `key`; returns its value if it was present.
    pub fn remove(&mut self, key: Key) -> Option<u32> {
        let (l, r) = self.split(self.root, key);
        let (m, r) = self.split(r, (key.0, key.1.wrapping_add(1)));
        let found = if m == NIL {
            None
        } else {
            self.free.push(m);
            self.len -= 1;
            Some(self.nodes[m as usize].value)
        };
        self.root = self.merge(l, r);
        found
    }

    /// The entry with the smallest key among those whose vruntime satisfies
    /// `eligible`, which must be monotone (true for every vruntime below some
    /// threshold, false above). Returns `(key, vruntime, value)`.
    pub fn first_eligible(&self, eligible: impl Fn(i64) -> bool) -> Option<(Key, i64, u32)> {
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if node.left != NIL && eligible(self.min_v(node.left)) {
                n = node.left;
            } else if eligible(node.vruntime) {
                return Some((node.key, node.vruntime, node.value));
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
