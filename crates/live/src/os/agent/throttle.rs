//! A bound on what one user's datagrams cost the agent. Any local user
//! may send datagrams to its socket, and the agent runs at a real-time
//! priority: a user past its rate has the rest of its datagrams dropped,
//! neither parsed nor answered (counted as refusals). The socket is still
//! read, so the kernel's queue never fills for the others.

use faasched_model::{Nanos, SEC};
use std::collections::HashMap;

/// Datagrams a second one user may send, sustained.
pub(super) const DATAGRAMS_PER_SECOND: f64 = 500.0;

/// Datagrams one user may send at once, past the sustained rate.
pub(super) const DATAGRAM_BURST: f64 = 250.0;

/// Users with a bucket of their own; past them, the rest share one, so
/// that the table is bounded however many uids send.
const MAX_USERS: usize = 256;

/// A token bucket per sending user (root is never throttled: it runs the
/// launchers and the agent's operator).
#[derive(Debug, Default)]
pub(super) struct Throttle {
    users: HashMap<u32, Bucket>,
    rest: Bucket,
}

/// Datagrams a user may still send now, as of `at`.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Nanos,
}

impl Default for Bucket {
    fn default() -> Bucket {
        Bucket {
            tokens: DATAGRAM_BURST,
            at: 0,
        }
    }
}

impl Bucket {
    /// Takes a token at `now`, if the bucket, refilled since, has one.
    fn take(&mut self, now: Nanos) -> bool {
        let elapsed = now.saturating_sub(self.at) as f64 / SEC as f64;
        self.tokens = (self.tokens + elapsed * DATAGRAMS_PER_SECOND).min(DATAGRAM_BURST);
        self.at = self.at.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Throttle {
    /// Whether a datagram of `uid`'s, at `now`, is within its rate.
    pub(super) fn admit(&mut self, uid: u32, now: Nanos) -> bool {
        if uid == 0 {
            return true;
        }
        let full = self.users.len() >= MAX_USERS;
        match self.users.get_mut(&uid) {
            Some(bucket) => bucket.take(now),
            None if full => self.rest.take(now),
            None => {
                let mut bucket = Bucket {
                    at: now,
                    ..Bucket::default()
                };
                let admitted = bucket.take(now);
                self.users.insert(uid, bucket);
                admitted
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_gets_its_burst_then_its_rate_and_others_are_unaffected() {
        let mut t = Throttle::default();
        let start = 10 * SEC;
        let burst = (0..1000).filter(|_| t.admit(1000, start)).count();
        assert_eq!(burst, DATAGRAM_BURST as usize);
        // Another user, and root, at the same instant: their own buckets.
        assert!(t.admit(1001, start));
        assert!((0..1000).all(|_| t.admit(0, start)));
        // A tenth of a second later: a tenth of a second's rate.
        let later = start + SEC / 10;
        let refilled = (0..1000).filter(|_| t.admit(1000, later)).count();
        assert_eq!(refilled, (DATAGRAMS_PER_SECOND / 10.0) as usize);
        // A clock that goes back refills nothing.
        assert!(!t.admit(1000, start));
    }

    #[test]
    fn past_the_most_users_the_rest_share_one_bucket() {
        let mut t = Throttle::default();
        for uid in 1..=MAX_USERS as u32 {
            assert!(t.admit(uid, 0));
        }
        let shared = (0..1000).filter(|i| t.admit(100_000 + i, 0)).count();
        assert_eq!(shared, DATAGRAM_BURST as usize);
        assert_eq!(t.users.len(), MAX_USERS);
    }
}
