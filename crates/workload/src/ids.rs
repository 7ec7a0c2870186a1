//! The ids a reader has seen, to refuse a duplicate: a workload's outcomes,
//! its policies' calls and `compare`'s pairing all name invocations by id.
//!
//! Kept as disjoint runs of consecutive ids, so that the common workload,
//! numbered 0, 1, 2, ... as every generator and importer here writes it,
//! costs one entry whatever its length (a trace is streamed, and its
//! memory must not grow with it); ids in no order cost an entry each.

use std::collections::BTreeMap;

/// Ids seen, as runs `start -> end` (inclusive), disjoint and not adjacent.
#[derive(Debug, Default)]
pub(crate) struct SeenIds {
    runs: BTreeMap<u64, u64>,
}

impl SeenIds {
    /// Notes `id`; `false` if it was seen before.
    pub(crate) fn insert(&mut self, id: u64) -> bool {
        // The run starting at or before `id`, if it reaches `id` or ends just before.
        let before = self.runs.range(..=id).next_back().map(|(&s, &e)| (s, e));
        if before.is_some_and(|(_, end)| end >= id) {
            return false;
        }
        let after = id
            .checked_add(1)
            .and_then(|next| self.runs.get(&next).map(|&end| (next, end)));
        let start = match before {
            Some((start, end)) if end + 1 == id => start,
            _ => id,
        };
        let end = match after {
            Some((next, end)) => {
                self.runs.remove(&next);
                end
            }
            None => id,
        };
        self.runs.insert(start, end);
        true
    }

    /// How many runs it keeps.
    #[cfg(test)]
    fn runs(&self) -> usize {
        self.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ids_take_one_run_and_a_repeat_is_refused() {
        let mut seen = SeenIds::default();
        assert!((0..10_000).all(|id| seen.insert(id)));
        assert_eq!(seen.runs(), 1);
        assert!(!seen.insert(0) && !seen.insert(9_999) && !seen.insert(4_321));
        assert!(seen.insert(10_000));
        assert_eq!(seen.runs(), 1);
    }

    #[test]
    fn runs_merge_from_either_side_and_gaps_stay_apart() {
        let mut seen = SeenIds::default();
        for id in [5, 7, 3, u64::MAX, 0] {
            assert!(seen.insert(id), "{id}");
        }
        assert_eq!(seen.runs(), 5);
        assert!(seen.insert(6)); // joins 5 and 7
        assert!(seen.insert(4)); // joins 3 and 5..=7
        assert_eq!(seen.runs(), 3); // 0, 3..=7, MAX
        for id in [0, 3, 4, 5, 6, 7, u64::MAX] {
            assert!(!seen.insert(id), "{id}");
        }
        assert!(seen.insert(1) && seen.insert(2));
        assert_eq!(seen.runs(), 2); // 0..=7, MAX
        assert!(seen.insert(u64::MAX - 1));
        assert_eq!(seen.runs(), 2);
    }
}
