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

/// The priorities of the running RT tasks: a count per priority and a bitmap
/// of those present.
#[derive(Debug)]
pub struct RtRunning {
    counts: [u32; 100],
    bitmap: u128,
    /// Number of running RT tasks.
    pub len: usize,
}

impl Default for RtRunning {
    fn default() -> Self {
        RtRunning {
            counts: [0; 100],
            bitmap: 0,
            len: 0,
        }
    }
}

impl RtRunning {
    /// A task of priority `prio` starts running.
    pub fn add(&mut self, prio: u8) {
        self.counts[prio as usize] += 1;
        self.bitmap |= 1 << prio;
        self.len += 1;
    }

    /// A task of priority `prio` stops running.
    pub fn remove(&mut self, prio: u8) {
        let n = &mut self.counts[prio as usize];
        *n -= 1;
        if *n == 0 {
            self.bitmap &= !(1 << prio);
        }
        self.len -= 1;
    }

    /// Whether a running task's priority is below `prio`.
    pub fn any_below(&self, prio: u8) -> bool {
        self.bitmap & ((1 << prio) - 1) != 0
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

    #[test]
    fn running_priorities_counted() {
        let mut r = RtRunning::default();
        r.add(50);
        r.add(50);
        r.add(10);
        assert!(r.any_below(11) && !r.any_below(10));
        r.remove(10);
        r.remove(50);
        assert!(!r.any_below(50) && r.any_below(51));
        r.remove(50);
        assert_eq!((r.any_below(99), r.len), (false, 0));
    }
}
