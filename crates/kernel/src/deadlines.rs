//! The waiting tasks of an EEVDF queue, ordered by `(deadline, seq)`, with the
//! query EEVDF needs: the first entry whose vruntime is eligible.
//!
//! Queues are short almost always (a few tasks per core at most), and for a
//! short queue a sorted array beats any tree: a binary search, one small
//! `memmove` per change, and a scan for the first eligible entry that usually
//! stops at once (deadline order is close to vruntime order). Long queues
//! (overload) need the O(log n) of the augmented [`Treap`]. So the entries
//! live in a sorted array until it would outgrow [`ARRAY_MAX`]; then they move
//! into the treap, where they stay until the queue next empties.
//!
//! Both forms answer every query identically; only their costs differ.

use crate::treap::{Key, Treap};

/// Most entries the array form holds.
const ARRAY_MAX: usize = 64;

/// One waiting entry of the array form.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: Key,
    vruntime: i64,
    value: u32,
}

/// The waiting set: a sorted array while short, a treap once long.
#[derive(Debug, Default)]
pub struct Deadlines {
    /// Sorted by key; empty while `tree` is in use.
    array: Vec<Entry>,
    /// The entries, once they outgrew the array (until the queue empties);
    /// boxed, as it is rarely there.
    tree: Option<Box<Treap>>,
}

impl Deadlines {
    /// Number of entries.
    pub fn len(&self) -> usize {
        match &self.tree {
            Some(t) => t.len(),
            None => self.array.len(),
        }
    }

    /// Inserts `value` under `key` with its vruntime. Keys must be unique.
    pub fn insert(&mut self, key: Key, vruntime: i64, value: u32) {
        if self.tree.is_none() && self.array.len() == ARRAY_MAX {
            let mut tree = Box::new(Treap::default());
            for e in self.array.drain(..) {
                tree.insert(e.key, e.vruntime, e.value);
            }
            self.tree = Some(tree);
        }
        match &mut self.tree {
            Some(t) => t.insert(key, vruntime, value),
            None => {
                // From the back: a preempted task's fresh deadline is mostly the latest.
                let i = self
                    .array
                    .iter()
                    .rposition(|e| e.key < key)
                    .map_or(0, |i| i + 1);
                self.array.insert(
                    i,
                    Entry {
                        key,
                        vruntime,
                        value,
                    },
                );
            }
        }
    }

    /// Removes the entry under `key`; returns its value if it was present.
    pub fn remove(&mut self, key: Key) -> Option<u32> {
        match &mut self.tree {
            Some(t) => {
                let found = t.remove(key);
                if t.len() == 0 {
                    self.tree = None;
                }
                found
            }
            None => {
                // From the front: removals are mostly of the pick, which is.
                let i = self.array.iter().position(|e| e.key == key)?;
                Some(self.array.remove(i).value)
            }
        }
    }

    /// The entry with the smallest key. Returns `(key, vruntime, value)`.
    pub fn first(&self) -> Option<(Key, i64, u32)> {
        match &self.tree {
            Some(t) => t.first(),
            None => self.array.first().map(|e| (e.key, e.vruntime, e.value)),
        }
    }

    /// The entry with the smallest key among those whose vruntime satisfies
    /// `eligible`, which must be monotone (true for every vruntime below some
    /// threshold, false above). Returns `(key, vruntime, value)`.
    pub fn first_eligible(&self, eligible: impl Fn(i64) -> bool) -> Option<(Key, i64, u32)> {
        match &self.tree {
            Some(t) => t.first_eligible(eligible),
            None => self
                .array
                .iter()
                .find(|e| eligible(e.vruntime))
                .map(|e| (e.key, e.vruntime, e.value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a naive reference, across the move from array to treap and
        /// back (inserts outnumber removals, so sizes reach a few times
        /// [`ARRAY_MAX`]), every query checked after every operation.
        #[test]
        fn matches_naive_reference(
            ops in prop::collection::vec((-30i64..30, -20i64..20, 0u8..7, any::<u16>()), 1..600),
            thr in -25i64..25,
        ) {
            let mut q = Deadlines::default();
            let mut naive: Vec<(Key, i64, u32)> = Vec::new();
            for (seq, (d, v, op, pick)) in ops.into_iter().enumerate() {
                match op {
                    // Drain completely now and then, to return to the array.
                    0 if pick % 64 == 0 => {
                        for e in naive.drain(..) {
                            prop_assert_eq!(q.remove(e.0), Some(e.2));
                        }
                    }
                    0 | 1 if !naive.is_empty() => {
                        let victim = naive.remove(pick as usize % naive.len());
                        prop_assert_eq!(q.remove(victim.0), Some(victim.2));
                    }
                    2 => prop_assert_eq!(q.remove((d, pick as u64)), None),
                    _ => {
                        let key = (d, 1 << 16 | seq as u64);
                        q.insert(key, v, seq as u32);
                        naive.push((key, v, seq as u32));
                    }
                }
                prop_assert_eq!(q.len(), naive.len());
                let first = naive.iter().min_by_key(|e| e.0).copied();
                prop_assert_eq!(q.first(), first);
                let want = naive.iter().filter(|e| e.1 <= thr).min_by_key(|e| e.0).copied();
                prop_assert_eq!(q.first_eligible(|v| v <= thr), want);
            }
        }
    }
}
