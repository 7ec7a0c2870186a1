//! The waiting tasks of an EEVDF queue, ordered by `(deadline, seq)`, with the
//! query EEVDF needs: the first entry whose vruntime is eligible.
//!
//! Queues are short almost always (a few tasks per core at most), and for a
//! short queue a sorted array beats any tree: a short scan to find a place,
//! a shift of the entries on one side of it, and a scan for the first
//! eligible entry that usually stops at once (deadline order is close to
//! vruntime order). The array is a ring: the pick, mostly its first entry,
//! leaves by moving the head, and a preempted task, whose fresh deadline is
//! mostly the latest, joins near the back; each shifts the fewer entries,
//! one by one (mostly none or one: cheaper than a call to `memmove`). Long
//! queues (overload) need the O(log n) of the augmented [`Treap`]. So the
//! entries live in the ring until it would overflow; then they move into the
//! treap, where they stay until the queue next empties.
//!
//! Both forms answer every query identically; only their costs differ.

use crate::treap::{Key, Treap};

/// Entries the ring holds (a power of two: positions wrap with a mask).
const RING: usize = 64;

/// One waiting entry of the ring.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: Key,
    vruntime: i64,
    value: u32,
}

/// The waiting set: a sorted ring while short, a treap once long.
#[derive(Debug)]
pub struct Deadlines {
    /// Entries `0..len` in key order, the `i`-th at `(head + i) % RING`;
    /// none while `tree` is in use. (Boxed: 2 KiB would make every queue's
    /// class as large.)
    ring: Box<[Entry; RING]>,
    head: usize,
    len: usize,
    /// The entries, once they outgrew the ring (until the queue empties);
    /// boxed, as it is rarely there.
    tree: Option<Box<Treap>>,
}

impl Default for Deadlines {
    fn default() -> Self {
        let empty = Entry {
            key: (0, 0),
            vruntime: 0,
            value: 0,
        };
        Deadlines {
            ring: Box::new([empty; RING]),
            head: 0,
            len: 0,
            tree: None,
        }
    }
}

impl Deadlines {
    /// Number of entries.
    pub fn len(&self) -> usize {
        match &self.tree {
            Some(t) => t.len(),
            None => self.len,
        }
    }

    /// The ring's `i`-th entry in key order.
    fn at(&self, i: usize) -> &Entry {
        &self.ring[(self.head + i) % RING]
    }

    /// Moves the ring's entry at position `from` (in key order) to `to`.
    fn shift(&mut self, from: usize, to: usize) {
        self.ring[(self.head + to) % RING] = *self.at(from);
    }

    /// Inserts `value` under `key` with its vruntime. Keys must be unique.
    pub fn insert(&mut self, key: Key, vruntime: i64, value: u32) {
        if self.tree.is_none() && self.len == RING {
            self.move_to_tree();
        }
        if let Some(t) = &mut self.tree {
            return t.insert(key, vruntime, value);
        }
        // From the back: a preempted task's fresh deadline is mostly the latest.
        let mut i = self.len;
        while i > 0 && self.at(i - 1).key > key {
            i -= 1;
        }
        if i == self.len {
            // Mostly: nothing to shift.
        } else if i >= self.len / 2 {
            for j in (i..self.len).rev() {
                self.shift(j, j + 1);
            }
        } else {
            self.head = (self.head + RING - 1) % RING;
            for j in 0..i {
                self.shift(j + 1, j);
            }
        }
        self.ring[(self.head + i) % RING] = Entry {
            key,
            vruntime,
            value,
        };
        self.len += 1;
    }

    /// Moves the full ring's entries into the treap. Out of line, so that
    /// `insert` stays small: this is rare.
    #[cold]
    fn move_to_tree(&mut self) {
        let mut tree = Box::new(Treap::default());
        for i in 0..self.len {
            let e = self.at(i);
            tree.insert(e.key, e.vruntime, e.value);
        }
        self.len = 0;
        self.tree = Some(tree);
    }

    /// Removes the entry under `key`; returns its value if it was present.
    /// Mostly the pick leaves, the ring's first entry: that case is inlined
    /// into the callers, moving the head (-0.7% instructions), the others
    /// are not.
    #[inline]
    pub fn remove(&mut self, key: Key) -> Option<u32> {
        if self.tree.is_none() && self.len > 0 && self.at(0).key == key {
            let value = self.at(0).value;
            self.head = (self.head + 1) % RING;
            self.len -= 1;
            return Some(value);
        }
        self.remove_other(key)
    }

    /// [`Deadlines::remove`] of an entry that is not the ring's first.
    #[inline(never)]
    fn remove_other(&mut self, key: Key) -> Option<u32> {
        if let Some(t) = &mut self.tree {
            let found = t.remove(key);
            if t.len() == 0 {
                self.tree = None;
            }
            return found;
        }
        // Not the first: `remove` took that.
        let i = (1..self.len).find(|&i| self.at(i).key == key)?;
        let value = self.at(i).value;
        if i < self.len / 2 {
            for j in (0..i).rev() {
                self.shift(j, j + 1);
            }
            self.head = (self.head + 1) % RING;
        } else {
            for j in i..self.len - 1 {
                self.shift(j + 1, j);
            }
        }
        self.len -= 1;
        Some(value)
    }

    /// The entry with the smallest key. Returns `(key, vruntime, value)`.
    pub fn first(&self) -> Option<(Key, i64, u32)> {
        match &self.tree {
            Some(t) => t.first(),
            None => (self.len > 0).then(|| {
                let e = self.at(0);
                (e.key, e.vruntime, e.value)
            }),
        }
    }

    /// The entry with the smallest key among those whose vruntime satisfies
    /// `eligible`, which must be monotone (true for every vruntime below some
    /// threshold, false above). Returns `(key, vruntime, value)`.
    pub fn first_eligible(&self, eligible: impl Fn(i64) -> bool) -> Option<(Key, i64, u32)> {
        match &self.tree {
            Some(t) => t.first_eligible(eligible),
            None => (0..self.len)
                .map(|i| self.at(i))
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
        /// [`RING`]), every query checked after every operation.
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
