//! A vector whose freed slots are reused, so memory follows what is live (tasks
//! in flight, queued nodes), not everything ever inserted. Slots are dense `u32`
//! indices, the handles the model stores in queues and on cores.

use std::ops::{Deref, DerefMut};

/// Items by slot; freed slots are reused by the next insert.
#[derive(Debug)]
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    /// Stores `item` in a free slot (or a new one) and returns the slot.
    /// Inlined, so that a task is built in its slot rather than copied there
    /// (a `memcpy` call per spawn).
    #[inline]
    pub fn insert(&mut self, item: T) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.items[s as usize] = item;
                s
            }
            None => {
                self.items.push(item);
                (self.items.len() - 1) as u32
            }
        }
    }

    /// Frees `slot` for reuse. Its item stays readable until the slot is reused:
    /// the caller drops what it must (a task's phases, say) before releasing.
    pub fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }
}

impl<T> Deref for Slab<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T> DerefMut for Slab<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_slots_are_reused_first() {
        let mut s = Slab::default();
        assert_eq!((s.insert('a'), s.insert('b'), s.insert('c')), (0, 1, 2));
        s.release(1);
        assert_eq!(s.insert('d'), 1);
        assert_eq!(s.insert('e'), 3);
        assert_eq!(&s[..], &['a', 'd', 'c', 'e']);
    }
}
