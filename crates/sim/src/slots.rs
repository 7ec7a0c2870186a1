//! A binary min-heap whose entries may each own a slot: the slot keeps its
//! entry's position, updated as entries move, so an entry is moved to a new
//! place in the order or taken out in place (one sift, no allocation), and
//! a timer that moves leaves nothing stale behind to pop. The cluster
//! engine's timers and the node engine's worker timers are each one.

/// What the heap holds: entries pop smallest first.
pub(crate) trait Entry: Copy + Ord {
    /// The slot it owns, if any: a slot owns at most one entry at a time.
    fn slot(&self) -> Option<usize>;
}

/// Marks a slot whose entry is out of the heap.
const OFF: u32 = u32::MAX;

/// Pending entries, smallest first (module docs).
#[derive(Debug)]
pub(crate) struct SlotHeap<E> {
    /// A binary min-heap.
    heap: Vec<E>,
    /// Each slot's entry's position in `heap`, or [`OFF`].
    pos: Vec<u32>,
}

impl<E: Entry> SlotHeap<E> {
    /// An empty heap of `slots` slots.
    pub(crate) fn new(slots: usize) -> SlotHeap<E> {
        SlotHeap {
            heap: Vec::new(),
            pos: vec![OFF; slots],
        }
    }

    /// Adds `e`, which owns no slot (those go through [`SlotHeap::set`]).
    pub(crate) fn push(&mut self, e: E) {
        debug_assert!(e.slot().is_none(), "an entry with a slot is set");
        self.heap.push(e);
        self.sift_up(self.heap.len() - 1);
    }

    /// Replaces slot `slot`'s entry with `e` (`None`: takes it out); `e`
    /// must own `slot`.
    ///
    /// # Panics
    ///
    /// If `slot` is beyond [`SlotHeap::new`]'s.
    pub(crate) fn set(&mut self, slot: usize, e: Option<E>) {
        debug_assert!(e.is_none_or(|e| e.slot() == Some(slot)));
        match (self.pos[slot], e) {
            (OFF, None) => {}
            (OFF, Some(e)) => {
                self.heap.push(e);
                self.sift_up(self.heap.len() - 1);
            }
            (p, Some(e)) => {
                let i = p as usize;
                let old = std::mem::replace(&mut self.heap[i], e);
                if e < old {
                    self.sift_up(i);
                } else if e > old {
                    self.sift_down(i);
                }
            }
            (p, None) => {
                self.pos[slot] = OFF;
                self.remove(p as usize);
            }
        }
    }

    /// The smallest entry, left in the heap.
    pub(crate) fn peek(&self) -> Option<&E> {
        self.heap.first()
    }

    /// Takes the smallest entry out; its slot is free again.
    pub(crate) fn pop(&mut self) -> Option<E> {
        let top = *self.heap.first()?;
        if let Some(s) = top.slot() {
            self.pos[s] = OFF;
        }
        self.remove(0);
        Some(top)
    }

    /// Whether any slot holds an entry.
    pub(crate) fn any_set(&self) -> bool {
        self.pos.iter().any(|&p| p != OFF)
    }

    /// Entries in the heap.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Takes the entry at `i` out (its slot, if any, already off).
    fn remove(&mut self, i: usize) {
        let Some(last) = self.heap.pop() else {
            return;
        };
        if i == self.heap.len() {
            return;
        }
        // The last entry fills the hole; it may belong above or below it.
        let old = std::mem::replace(&mut self.heap[i], last);
        if last < old {
            self.sift_up(i);
        } else {
            self.sift_down(i);
        }
    }

    /// Records that `e` is at `i`, if it owns a slot.
    #[inline(always)]
    fn placed(&mut self, e: E, i: usize) {
        if let Some(s) = e.slot() {
            self.pos[s] = i as u32;
        }
    }

    /// Moves the entry at `i` up while it is smaller than its parent.
    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let above = self.heap[parent];
            if e >= above {
                break;
            }
            self.heap[i] = above;
            self.placed(above, i);
            i = parent;
        }
        self.heap[i] = e;
        self.placed(e, i);
    }

    /// Moves the entry at `i` down while a child is smaller.
    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            // Which child is smaller is a coin toss: selected without a
            // branch that would mispredict.
            let right_first = right < n && self.heap[right] < self.heap[left];
            let child = std::hint::select_unpredictable(right_first, right, left);
            let below = self.heap[child];
            if below >= e {
                break;
            }
            self.heap[i] = below;
            self.placed(below, i);
            i = child;
        }
        self.heap[i] = e;
        self.placed(e, i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (key, slot): slots 0 and 1 own theirs, 9 means none.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct E(u32, u8);

    impl Entry for E {
        fn slot(&self) -> Option<usize> {
            (self.1 != 9).then_some(self.1 as usize)
        }
    }

    #[test]
    fn a_slot_holds_one_entry_moved_in_place_and_entries_pop_smallest_first() {
        let mut h = SlotHeap::new(2);
        h.push(E(5, 9));
        h.push(E(3, 9));
        h.set(0, Some(E(9, 0)));
        h.set(0, Some(E(1, 0)));
        h.set(1, Some(E(4, 1)));
        h.set(1, Some(E(7, 1)));
        assert_eq!(h.len(), 4);
        assert!(h.any_set());
        assert_eq!(h.peek(), Some(&E(1, 0)));
        h.set(0, None);
        let order: Vec<E> = std::iter::from_fn(|| h.pop()).collect();
        assert_eq!(order, [E(3, 9), E(5, 9), E(7, 1)]);
        assert!(!h.any_set());
        // A slot popped is free: set again, it holds one entry.
        h.set(1, Some(E(2, 1)));
        h.set(1, Some(E(8, 1)));
        assert_eq!((h.len(), h.pop(), h.pop()), (1, Some(E(8, 1)), None));
    }
}
