//! `darc`: Perséphone's DARC (dynamic application-aware reserved cores) as
//! the paper integrates it (§4 "Baselines"): late
//! binding, requests typed into groups by service time, each group with a
//! static reservation of workers. "Shorter groups can borrow cycles from
//! longer ones, but not vice versa"; no preemption.
//!
//! Mechanism, for a group `g` (groups ordered shortest first, reservations
//! laid out in that order from worker 0):
//!
//! 1. `g` may use the workers reserved to it, those reserved to longer
//!    groups and the unreserved ones, that is every worker from the first
//!    of its block on (Perséphone's "stealable" = cores not yet reserved
//!    when `g` was planned), plus the spillway worker (the last) when its
//!    plan ran out of workers ([`PlannedGroup::spillway`]).
//! 2. A request is typed by the first group with a matching [`Class`] (a
//!    function, or an estimate at most a bound: the paper's median split,
//!    where "the request's estimate classifies it"); a request no group
//!    claims falls to the longest group (Perséphone sends unknown types to
//!    its spillway core, which in a full plan the longest group holds).
//! 3. Held requests wait in one FIFO per group. A worker with nothing to run
//!    takes the head of the shortest non-empty group it may serve: shorter
//!    groups first, as Perséphone drains its typed queues in ascending
//!    order. Perséphone first looks for a free core reserved to the group
//!    and only then steals; here the engine offers idle workers one by one,
//!    so when a worker of a longer group and one of the group's own are
//!    idle together, which one runs the request is the engine's order of
//!    offers (the next offer serves the next request).
//! 4. **Drop rule** (the paper says DARC "drops requests" past capacity
//!    without saying when): a request is dropped on arrival when its
//!    group's held estimated work, itself included, exceeds its relative
//!    deadline × the workers its group may use. It could not then start in
//!    time even if those workers served nothing but its group's queue; work
//!    already running is not counted, so the rule errs towards keeping.
//!
//! Reservations come either explicitly ([`Darc::new`], the paper's manual
//! splits: 3 + 3 at the median for log-normal and exponential, 1 + 5 for
//! high bimodal, SIFT 3 / Segmentation 2 / Classification 1 for SD-VBS) or
//! by Perséphone's rule from a profile ([`Plan::new`], see there).

use faasched_model::node::{
    Decision, Dispatch, Local, Order, Placement, Refusal, RequestId, RequestInfo, WorkerId, Workers,
};
use faasched_model::{FunctionId, Nanos, Time};
use std::collections::VecDeque;

/// Which requests belong to a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Requests of this function.
    Function(FunctionId),
    /// Requests estimated at this much or less (and not claimed by an
    /// earlier group).
    EstimateUpTo(Nanos),
}

impl Class {
    fn matches(self, r: &RequestInfo) -> bool {
        match self {
            Class::Function(f) => r.function == f,
            Class::EstimateUpTo(bound) => r.estimate <= bound,
        }
    }
}

/// A group with an explicit reservation, for [`Darc::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The requests it holds.
    pub classes: Vec<Class>,
    /// Workers reserved to it.
    pub reserved: u32,
}

/// One request type of a workload profile, for [`Plan::new`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TypeProfile {
    /// Which requests are of this type.
    pub class: Class,
    /// Their mean service time.
    pub mean: Nanos,
    /// Their share of the requests (any positive scale: shares are
    /// normalised by their work).
    pub share: f64,
}

/// A group as Perséphone's rule plans it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedGroup {
    /// Its types' classes, shortest mean first.
    pub classes: Vec<Class>,
    /// Its share of the work × the workers.
    pub demand: f64,
    /// Workers reserved to it.
    pub reserved: u32,
    /// Its demand exceeded the workers left: it also uses the spillway
    /// worker (the last).
    pub spillway: bool,
}

/// Perséphone's reservation plan for a profile (maxdml/psp,
/// `Dispatcher::set_darc`):
///
/// 1. Types sorted by mean service time (ties in the order given).
/// 2. Grouped: the shortest type not yet grouped opens a group, and each
///    next type joins it while its mean is less than 20% above the
///    opener's.
/// 3. A group's demand = its share of the work (Σ mean × share over Σ of all)
///    × workers; it reserves 1 worker if the demand's whole part is 0, the
///    whole part if the fraction is at most 0.5, else the demand rounded up.
/// 4. Reserved shortest group first; a group wanting more than is left
///    takes what is left and the spillway worker (the last worker).
///
/// Perséphone re-plans as demands move; here the plan is fixed, as in the
/// paper.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Shortest first.
    pub groups: Vec<PlannedGroup>,
    /// The group's workers.
    pub workers: u32,
}

/// Perséphone's similarity bound: a type joins a group while its mean is
/// less than 1 + 1/5 times the group's first (`delta` = 0.2 in psp).
const SIMILAR_DIVISOR: u128 = 5;

/// A DARC configuration that cannot work.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BadDarc {
    /// No workers to reserve.
    #[error("darc needs at least one worker, got 0")]
    NoWorkers,
    /// No groups or no types.
    #[error("darc needs at least one group of request types, got none")]
    NoGroups,
    /// A group claims no requests.
    #[error("darc group {group} has no classes: it would hold no requests")]
    EmptyGroup {
        /// Its index, shortest first.
        group: usize,
    },
    /// More reserved than there are workers.
    #[error("darc reserves {reserved} workers but the group has only {workers}")]
    Overbooked {
        /// Workers reserved in all.
        reserved: u64,
        /// Workers there are.
        workers: u32,
    },
    /// The longest group has no worker it may use.
    #[error(
        "darc group {group} (the longest) may use no worker: reserve it one or leave one unreserved"
    )]
    Stranded {
        /// Its index.
        group: usize,
    },
    /// A type's share is not a positive number.
    #[error("darc type {index} has share {share}, but must have a positive finite share")]
    BadShare {
        /// The type's index in the profile.
        index: usize,
        /// Its share.
        share: f64,
    },
    /// Every type has a mean service time of 0.
    #[error("darc profile has no work: every type's mean service time is 0")]
    NoWork,
}

impl Plan {
    /// Perséphone's plan for `types` on `workers` workers (see [`Plan`]).
    pub fn new(types: &[TypeProfile], workers: u32) -> Result<Plan, BadDarc> {
        if workers == 0 {
            return Err(BadDarc::NoWorkers);
        }
        if types.is_empty() {
            return Err(BadDarc::NoGroups);
        }
        if let Some((index, t)) = types
            .iter()
            .enumerate()
            .find(|(_, t)| !(t.share.is_finite() && t.share > 0.0))
        {
            return Err(BadDarc::BadShare {
                index,
                share: t.share,
            });
        }
        let work = |t: &TypeProfile| t.mean as f64 * t.share;
        let total: f64 = types.iter().map(work).sum();
        if total <= 0.0 || !total.is_finite() {
            return Err(BadDarc::NoWork);
        }
        let mut sorted: Vec<&TypeProfile> = types.iter().collect();
        sorted.sort_by_key(|t| t.mean);

        let mut groups = Vec::new();
        let mut reserved = 0u32;
        let mut rest = sorted.as_slice();
        while let Some((first, _)) = rest.split_first() {
            let len = rest
                .iter()
                .take_while(|t| {
                    u128::from(t.mean - first.mean) * SIMILAR_DIVISOR < u128::from(first.mean)
                })
                .count()
                .max(1);
            let (members, tail) = rest.split_at(len);
            rest = tail;
            let demand = members.iter().map(|t| work(t)).sum::<f64>() / total * f64::from(workers);
            let whole = demand.floor();
            let wanted = if whole == 0.0 {
                1
            } else if demand - whole <= 0.5 {
                whole as u32
            } else {
                demand.ceil() as u32
            };
            let left = workers - reserved;
            let (take, spillway) = if wanted > left {
                (left, true)
            } else {
                (wanted, false)
            };
            reserved += take;
            groups.push(PlannedGroup {
                classes: members.iter().map(|t| t.class).collect(),
                demand,
                reserved: take,
                spillway,
            });
        }
        Ok(Plan { groups, workers })
    }

    /// Workers reserved per group, shortest first.
    pub fn reservations(&self) -> Vec<u32> {
        self.groups.iter().map(|g| g.reserved).collect()
    }
}

/// One group at run time.
#[derive(Clone, Debug)]
struct Lane {
    classes: Vec<Class>,
    /// The first worker of its block: it may use every worker from here on.
    start: u32,
    /// It may also use the last worker.
    spillway: bool,
    /// Workers it may use.
    usable: u32,
    held: VecDeque<RequestInfo>,
    /// Σ estimate over `held`.
    held_work: u128,
}

/// DARC's dispatcher: see the module docs.
#[derive(Clone, Debug)]
pub struct Darc {
    lanes: Vec<Lane>,
    workers: u32,
    /// What it calls itself: `darc`, or the catalogue's name for a
    /// particular plan.
    name: &'static str,
}

impl Darc {
    /// DARC with explicit reservations on a group of `workers` workers:
    /// `groups` shortest first, reserved in that order from worker 0; the
    /// workers left over are unreserved, open to every group.
    pub fn new(groups: Vec<Group>, workers: u32) -> Result<Darc, BadDarc> {
        let planned = groups
            .into_iter()
            .map(|g| PlannedGroup {
                classes: g.classes,
                demand: f64::from(g.reserved),
                reserved: g.reserved,
                spillway: false,
            })
            .collect();
        Darc::from_plan(Plan {
            groups: planned,
            workers,
        })
    }

    /// DARC reserving by Perséphone's rule from a workload profile.
    pub fn from_profile(types: &[TypeProfile], workers: u32) -> Result<Darc, BadDarc> {
        Darc::from_plan(Plan::new(types, workers)?)
    }

    /// The same DARC, calling itself `name` (a catalogue entry with a plan
    /// of its own).
    pub fn named(self, name: &'static str) -> Darc {
        Darc { name, ..self }
    }

    /// DARC following `plan`.
    pub fn from_plan(plan: Plan) -> Result<Darc, BadDarc> {
        let n = plan.workers;
        if n == 0 {
            return Err(BadDarc::NoWorkers);
        }
        if plan.groups.is_empty() {
            return Err(BadDarc::NoGroups);
        }
        if let Some(group) = plan.groups.iter().position(|g| g.classes.is_empty()) {
            return Err(BadDarc::EmptyGroup { group });
        }
        let reserved: u64 = plan.groups.iter().map(|g| u64::from(g.reserved)).sum();
        if reserved > u64::from(n) {
            return Err(BadDarc::Overbooked {
                reserved,
                workers: n,
            });
        }
        let mut start = 0;
        let mut lanes = Vec::with_capacity(plan.groups.len());
        for g in plan.groups {
            let spill_extra = u32::from(g.spillway && n - 1 < start);
            lanes.push(Lane {
                classes: g.classes,
                start,
                spillway: g.spillway,
                usable: n - start + spill_extra,
                held: VecDeque::new(),
                held_work: 0,
            });
            start += g.reserved;
        }
        let last = lanes.len() - 1;
        if lanes[last].usable == 0 {
            return Err(BadDarc::Stranded { group: last });
        }
        Ok(Darc {
            lanes,
            workers: n,
            name: "darc",
        })
    }

    /// Workers each group may use, shortest first.
    pub fn usable(&self) -> Vec<u32> {
        self.lanes.iter().map(|l| l.usable).collect()
    }

    /// The group a request is held in.
    fn group_of(&self, r: &RequestInfo) -> usize {
        self.lanes
            .iter()
            .position(|l| l.classes.iter().any(|c| c.matches(r)))
            .unwrap_or(self.lanes.len() - 1)
    }

    /// Whether worker `w` may serve group `g`.
    fn serves(&self, g: usize, w: WorkerId) -> bool {
        let l = &self.lanes[g];
        w.0 >= l.start || (l.spillway && w.0 == self.workers - 1)
    }
}

impl Dispatch for Darc {
    fn name(&self) -> &str {
        self.name
    }

    fn local(&self) -> Local {
        Local {
            order: Order::Fifo,
            quantum: None,
        }
    }

    fn on_request(&mut self, _now: Time, req: &RequestInfo, _workers: &Workers) -> Decision {
        let g = self.group_of(req);
        let lane = &mut self.lanes[g];
        let held = lane.held_work + u128::from(req.estimate);
        let placement = if held > u128::from(req.deadline) * u128::from(lane.usable) {
            Placement::Drop(Refusal::Unplaced)
        } else {
            lane.held_work = held;
            lane.held.push_back(*req);
            Placement::Hold
        };
        Decision {
            placement,
            scanned: 0,
        }
    }

    fn on_idle(
        &mut self,
        _now: Time,
        worker: WorkerId,
        _workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        let Some(g) = (0..self.lanes.len())
            .find(|&g| !self.lanes[g].held.is_empty() && self.serves(g, worker))
        else {
            return;
        };
        let lane = &mut self.lanes[g];
        if let Some(r) = lane.held.pop_front() {
            lane.held_work -= u128::from(r.estimate);
            out.push(r.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testkit::info;
    use faasched_model::{MS, US};

    fn types(ts: &[(Class, Nanos, f64)]) -> Vec<TypeProfile> {
        ts.iter()
            .map(|&(class, mean, share)| TypeProfile { class, mean, share })
            .collect()
    }

    fn f(id: u32) -> Class {
        Class::Function(FunctionId(id))
    }

    #[test]
    fn persephone_gives_one_plus_five_for_the_note_profiles() {
        // Log-normal split at its median (684 µs): group means 0.20 ms and
        // 21.95 ms, half the requests each; 0.9% of the work is short.
        let lognormal = types(&[
            (Class::EstimateUpTo(684 * US), 200 * US, 0.5),
            (Class::EstimateUpTo(Nanos::MAX), 21_950 * US, 0.5),
        ]);
        let plan = Plan::new(&lognormal, 6).unwrap();
        assert_eq!(plan.reservations(), [1, 5]);
        assert!((plan.groups[0].demand - 0.0544).abs() < 1e-3);
        assert_eq!(
            plan.groups.iter().map(|g| g.spillway).collect::<Vec<_>>(),
            [false, true]
        );
        // Exponential (mean 100 µs) split at 69.3 µs: 30.7 vs 169.3 µs;
        // the short demand 0.92 has whole part 0: 1 worker; the long 5.08
        // rounds down to the 5 left.
        let exponential = types(&[
            (Class::EstimateUpTo(69_300), 30_700, 0.5),
            (Class::EstimateUpTo(Nanos::MAX), 169_300, 0.5),
        ]);
        let plan = Plan::new(&exponential, 6).unwrap();
        assert_eq!(plan.reservations(), [1, 5]);
        assert!(!plan.groups[1].spillway);
        // High bimodal: 26 µs and 2,070 µs, half each: 0.074 → 1, the rest 5.
        let bimodal = types(&[(f(0), 26 * US, 0.5), (f(1), 2_070 * US, 0.5)]);
        assert_eq!(Plan::new(&bimodal, 6).unwrap().reservations(), [1, 5]);
    }

    #[test]
    fn persephone_leaves_sdvbs_classification_only_the_spillway() {
        // SIFT 113 µs 90%, Segmentation 1,100 µs 9%, Classification
        // 2,070 µs 1%, listed out of order: demands 2.76, 2.68, 0.56.
        let sdvbs = types(&[
            (f(2), 2_070 * US, 0.01),
            (f(0), 113 * US, 0.9),
            (f(1), 1_100 * US, 0.09),
        ]);
        let plan = Plan::new(&sdvbs, 6).unwrap();
        assert_eq!(plan.reservations(), [3, 3, 0]);
        assert_eq!(plan.groups[2].classes, [f(2)]);
        assert!(plan.groups[2].spillway);
        let darc = Darc::from_plan(plan).unwrap();
        // SIFT may use all 6, Segmentation its 3, Classification worker 5.
        assert_eq!(darc.usable(), [6, 3, 1]);
        assert!(darc.serves(2, WorkerId(5)) && !darc.serves(2, WorkerId(4)));
    }

    #[test]
    fn similar_means_share_a_group() {
        // 100 and 119 µs group (19% above), 120 µs would not (20%).
        let plan = Plan::new(
            &types(&[(f(0), 100, 1.0), (f(1), 119, 1.0), (f(2), 120, 1.0)]),
            4,
        )
        .unwrap();
        assert_eq!(plan.groups[0].classes, [f(0), f(1)]);
        assert_eq!(plan.groups[1].classes, [f(2)]);
        let plan = Plan::new(&types(&[(f(0), 100, 1.0), (f(2), 120, 1.0)]), 4).unwrap();
        assert_eq!(plan.groups.len(), 2);
    }

    #[test]
    fn bad_profiles_and_reservations_are_errors_naming_the_fault() {
        let one = types(&[(f(0), 100, 1.0)]);
        assert_eq!(Plan::new(&one, 0), Err(BadDarc::NoWorkers));
        assert_eq!(Plan::new(&[], 2), Err(BadDarc::NoGroups));
        let bad = types(&[(f(0), 100, 1.0), (f(1), 100, f64::NAN)]);
        assert!(matches!(
            Plan::new(&bad, 2),
            Err(BadDarc::BadShare { index: 1, .. })
        ));
        assert!(matches!(
            Plan::new(&types(&[(f(0), 100, -1.0)]), 2),
            Err(BadDarc::BadShare { index: 0, .. })
        ));
        assert_eq!(
            Plan::new(&types(&[(f(0), 0, 1.0)]), 2),
            Err(BadDarc::NoWork)
        );
        let g = |c: Vec<Class>, reserved| Group {
            classes: c,
            reserved,
        };
        assert_eq!(
            Darc::new(vec![g(vec![f(0)], 4), g(vec![f(1)], 3)], 6).unwrap_err(),
            BadDarc::Overbooked {
                reserved: 7,
                workers: 6
            }
        );
        assert_eq!(
            Darc::new(vec![g(vec![f(0)], 6), g(vec![f(1)], 0)], 6).unwrap_err(),
            BadDarc::Stranded { group: 1 }
        );
        assert_eq!(
            Darc::new(vec![g(vec![], 1)], 6).unwrap_err(),
            BadDarc::EmptyGroup { group: 0 }
        );
        assert_eq!(Darc::new(vec![], 6).unwrap_err(), BadDarc::NoGroups);
        let msg = BadDarc::Stranded { group: 1 }.to_string();
        assert!(msg.contains("group 1"), "{msg}");
    }

    fn idle(p: &mut Darc, w: u32, ws: &Workers) -> Vec<RequestId> {
        let mut out = Vec::new();
        p.on_idle(0, WorkerId(w), ws, &mut out);
        out
    }

    /// High bimodal 1 + 5: function 0 short on worker 0, function 1 long on
    /// workers 1–5.
    fn bimodal() -> (Darc, Workers) {
        let p = Darc::new(
            vec![
                Group {
                    classes: vec![f(0)],
                    reserved: 1,
                },
                Group {
                    classes: vec![f(1)],
                    reserved: 5,
                },
            ],
            6,
        )
        .unwrap();
        let ws = Workers::new(6, p.local());
        (p, ws)
    }

    #[test]
    fn short_groups_borrow_longer_groups_workers_never_the_reverse() {
        let (mut p, ws) = bimodal();
        assert_eq!(p.usable(), [6, 5]);
        // A long request never runs on the short group's worker.
        assert_eq!(
            p.on_request(0, &info(0, 1, 0, 20 * MS, 2 * MS), &ws)
                .placement,
            Placement::Hold
        );
        assert!(idle(&mut p, 0, &ws).is_empty());
        assert_eq!(idle(&mut p, 3, &ws), [RequestId(0)]);
        // A short one borrows a long group's worker.
        p.on_request(0, &info(1, 0, 0, 260 * US, 26 * US), &ws);
        assert_eq!(idle(&mut p, 5, &ws), [RequestId(1)]);
        // With both held, the short group goes first, even on a long worker;
        // the short group's own worker never takes the long request.
        p.on_request(0, &info(2, 1, 0, 20 * MS, 2 * MS), &ws);
        p.on_request(0, &info(3, 0, 0, 260 * US, 26 * US), &ws);
        p.on_request(0, &info(4, 0, 0, 260 * US, 26 * US), &ws);
        assert_eq!(idle(&mut p, 2, &ws), [RequestId(3)]);
        assert_eq!(idle(&mut p, 0, &ws), [RequestId(4)]);
        assert!(idle(&mut p, 0, &ws).is_empty());
        assert_eq!(idle(&mut p, 1, &ws), [RequestId(2)]);
    }

    #[test]
    fn a_request_is_dropped_when_its_groups_held_work_exceeds_deadline_times_usable_workers() {
        let (mut p, ws) = bimodal();
        // Long: deadline 100 µs, estimate 30 µs, 5 usable workers: 500 µs of
        // held work fits 16 requests (480); the 17th would make 510.
        for id in 0..16 {
            let d = p.on_request(0, &info(id, 1, 0, 100 * US, 30 * US), &ws);
            assert_eq!(d.placement, Placement::Hold, "request {id}");
        }
        let d = p.on_request(0, &info(16, 1, 0, 100 * US, 30 * US), &ws);
        assert_eq!(
            (d.placement, d.scanned),
            (Placement::Drop(Refusal::Unplaced), 0)
        );
        // Serving one frees room for one more.
        assert_eq!(idle(&mut p, 1, &ws), [RequestId(0)]);
        let d = p.on_request(0, &info(18, 1, 0, 100 * US, 30 * US), &ws);
        assert_eq!(d.placement, Placement::Hold);
        let d = p.on_request(0, &info(19, 1, 0, 100 * US, 30 * US), &ws);
        assert_eq!(d.placement, Placement::Drop(Refusal::Unplaced));
        // Other groups are unaffected: the short group may use 6 workers, so
        // 60 µs of work due in 10 µs just fits, 61 µs does not.
        let d = p.on_request(0, &info(20, 0, 0, 10 * US, 60 * US), &ws);
        assert_eq!(d.placement, Placement::Hold);
        let d = p.on_request(0, &info(21, 0, 0, 10 * US, 1), &ws);
        assert_eq!(d.placement, Placement::Drop(Refusal::Unplaced));
    }

    #[test]
    fn the_median_split_types_by_estimate_and_unknown_functions_fall_to_the_longest() {
        // The paper's 3 + 3 at the exponential's median.
        let mut p = Darc::new(
            vec![
                Group {
                    classes: vec![Class::EstimateUpTo(69 * US)],
                    reserved: 3,
                },
                Group {
                    classes: vec![Class::EstimateUpTo(Nanos::MAX)],
                    reserved: 3,
                },
            ],
            6,
        )
        .unwrap();
        let ws = Workers::new(6, p.local());
        p.on_request(0, &info(0, 7, 0, MS, 69 * US), &ws);
        p.on_request(0, &info(1, 7, 0, MS, 70 * US), &ws);
        // Request 0 (at the median) is short, request 1 long. Worker 3 is the
        // long group's, but the short group goes first wherever it may run;
        // the short group's worker 2 never takes the long request.
        assert_eq!(idle(&mut p, 3, &ws), [RequestId(0)]);
        assert!(idle(&mut p, 2, &ws).is_empty());
        assert_eq!(idle(&mut p, 4, &ws), [RequestId(1)]);

        let (mut p, ws) = bimodal();
        p.on_request(0, &info(0, 9, 0, MS, 10 * US), &ws);
        assert!(idle(&mut p, 0, &ws).is_empty());
        assert_eq!(idle(&mut p, 1, &ws), [RequestId(0)]);
    }

    #[test]
    fn the_papers_sdvbs_split_lays_groups_out_shortest_first() {
        let p = Darc::new(
            vec![
                Group {
                    classes: vec![f(0)],
                    reserved: 3,
                },
                Group {
                    classes: vec![f(1)],
                    reserved: 2,
                },
                Group {
                    classes: vec![f(2)],
                    reserved: 1,
                },
            ],
            6,
        )
        .unwrap();
        assert_eq!(p.usable(), [6, 3, 1]);
        assert!(p.serves(2, WorkerId(5)) && !p.serves(2, WorkerId(4)));
        assert!(p.serves(1, WorkerId(3)) && !p.serves(1, WorkerId(2)));
    }
}
