//! The real-time run queue: one FIFO list per priority, highest priority first,
//! as Linux's `rt_prio_array`.

use std::collections::VecDeque;

/// Priorities 1..=99 (0 unused), with a bitmap of the non-empty ones.
#[derive(Debug)]
pub struct RtQueue {
    lists: Vec<VecDeque<u32>>,
    bitmap: u128,
    /// Number of queued tasks.
    pub len: usize,
}

impl Default for RtQueue {
    fn default() -> Self {
        RtQueue {
            lists: vec![VecDeque::new(); 100],
            bitmap: 0,
            len: 0,
        }
    }
}

impl RtQueue {
    /// Highest queued priority.
    pub fn top_prio(&self) -> Option<u8> {
        (self.bitmap != 0).then(|| 127 - self.bitmap.leading_zeros() as u8)
    }

    /// Whether a task of priority `prio` is queued.
    pub fn has_prio(&self, prio: u8) -> bool {
        self.bitmap & (1 << prio) != 0
    }

    /// Queues `slot` at the tail (new, woken, RR expired) or head (preempted) of
    /// its priority list.
    pub fn push(&mut self, slot: u32, prio: u8, head: bool) {
        let l = &mut self.lists[prio as usize];
        if head {
            l.push_front(slot);
        } else {
            l.push_back(slot);
        }
        self.bitmap |= 1 << prio;
        self.len += 1;
    }

    /// Removes and returns the first task of the highest priority.
    pub fn pop(&mut self) -> Option<u32> {
        let p = self.top_prio()?;
        let l = &mut self.lists[p as usize];
        let slot = l.pop_front();
        if l.is_empty() {
            self.bitmap &= !(1 << p);
        }
        self.len -= 1;
        slot
    }

    /// Removes `slot` from priority `prio`'s list; returns whether it was there.
    pub fn remove(&mut self, slot: u32, prio: u8) -> bool {
        let l = &mut self.lists[prio as usize];
        let Some(i) = l.iter().position(|&s| s == slot) else {
            return false;
        };
        l.remove(i);
        if l.is_empty() {
            self.bitmap &= !(1 << prio);
        }
        self.len -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_priority_first_fifo_within() {
        let mut q = RtQueue::default();
        q.push(1, 10, false);
        q.push(2, 50, false);
        q.push(3, 10, false);
        q.push(4, 50, true);
        assert_eq!(q.top_prio(), Some(50));
        assert_eq!((q.pop(), q.pop(), q.pop()), (Some(4), Some(2), Some(1)));
        assert!(q.remove(3, 10));
        assert_eq!((q.pop(), q.len), (None, 0));
    }
}
