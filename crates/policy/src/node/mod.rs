//! The node level's dispatch policies: SledgeScale (sledgescale-sec25 §3.2–3.3)
//! and the baselines it is measured against (§4 "Baselines"), each a pure
//! [`Dispatch`](faasched_model::node::Dispatch) over one dispatcher's group of
//! workers. None holds the engine; each reads the [`Workers`] it is handed
//! and returns a decision.
//!
//! The catalogue, by the name [`Dispatch::name`] returns:
//!
//! | Name | Constructor | Binding | Worker order |
//! |---|---|---|---|
//! | `sledgescale` | [`SledgeScale::new`]`(`[`Scan::Paper`]`, `[`PreemptTest::Paper`]`)` | early, Alg. 1 + 2 | EDF, no quantum |
//! | `sledgescale-code` | [`SledgeScale::new`]`(`[`Scan::Paper`]`, `[`PreemptTest::Code`]`)` | early | EDF, no quantum |
//! | `sledgescale+` | [`SledgeScale::new`]`(`[`Scan::Plus`]`, `[`PreemptTest::Paper`]`)` | early, idle told apart | EDF, no quantum |
//! | `sledgescale+-code` | [`SledgeScale::new`]`(`[`Scan::Plus`]`, `[`PreemptTest::Code`]`)` | early | EDF, no quantum |
//! | `srpt` | [`Srpt::new`]`()` | early, Alg. 2 by size | SRPT, no quantum |
//! | `rr` | [`RoundRobin::new`]`()` | early, in turn | EDF, 1 ms quantum |
//! | `jsq` | [`Jsq::new`]`()` | early, fewest unfinished | EDF, 1 ms quantum |
//! | `lld` | [`Lld::new`]`()` | early, least remaining work | EDF, 1 ms quantum |
//! | `sledge` | [`Sledge::new`]`()` | late, global FIFO, batch of 5 | FIFO, 1 ms quantum (round robin) |
//! | `shinjuku` | [`Shinjuku::new`]`(`[`Queues::Single`]`, `[`Resume::SameWorker`]`)` | late, one FIFO, 15 µs dispatcher quantum, resumed where preempted | FIFO |
//! | `shinjuku-mq` | [`Shinjuku::new`]`(`[`Queues::Multi`]`, `[`Resume::SameWorker`]`)` | late, a FIFO per function | FIFO |
//! | `shinjuku-any` | [`Shinjuku::new`]`(`[`Queues::Single`]`, `[`Resume::AnyWorker`]`)` | late, one FIFO, preempted to its tail | FIFO |
//! | `shinjuku-mq-any` | [`Shinjuku::new`]`(`[`Queues::Multi`]`, `[`Resume::AnyWorker`]`)` | late, a FIFO per function | FIFO |
//! | `darc` | [`Darc::new`] (explicit reservations) or [`Darc::from_profile`] (Perséphone's rule) | late, static reservations | FIFO |
//!
//! One instance serves one dispatcher: build one per dispatcher. Every
//! policy returns [`Placement::Drop`](faasched_model::node::Placement::Drop)
//! rather than panicking when its group has no workers.
//!
//! [`Dispatch::name`]: faasched_model::node::Dispatch::name
//! [`Workers`]: faasched_model::node::Workers

mod admission;
mod darc;
mod early;
mod shinjuku;
mod sledge;
mod sledgescale;
mod srpt;
mod stretch;

pub use admission::{Admission, Admitted};
pub use darc::{BadDarc, Class, Darc, Group, Plan, PlannedGroup, TypeProfile};
pub use early::{BASELINE_QUANTUM, Jsq, Lld, RoundRobin};
pub use shinjuku::{Queues, Resume, SHINJUKU_QUANTUM, Shinjuku};
pub use sledge::{SLEDGE_BATCH, SLEDGE_QUANTUM, Sledge};
pub use sledgescale::{PreemptTest, Scan, SledgeScale};
pub use srpt::Srpt;
pub use stretch::Stretched;

#[cfg(test)]
pub(crate) mod testkit {
    //! Hand-built worker states for the policies' tests.

    use faasched_model::node::{Queued, RequestId, RequestInfo, WorkerId, Workers};
    use faasched_model::{FunctionId, Nanos, Time};

    /// A request of function `f`, id `id`, arriving at `arrival`.
    pub fn info(id: u64, f: u32, arrival: Time, deadline: Nanos, estimate: Nanos) -> RequestInfo {
        RequestInfo {
            id: RequestId(id),
            function: FunctionId(f),
            arrival,
            deadline,
            estimate,
        }
    }

    /// Starts `req` on the idle worker `w` at `at`.
    pub fn run(ws: &mut Workers, w: u32, req: RequestInfo, at: Time) {
        let w = WorkerId(w);
        assert!(ws.get(w).is_idle(), "worker {w:?} must be idle to start");
        ws.enqueue(w, Queued::new(req));
        ws.start_next(w, at);
    }

    /// Queues `req` on worker `w`.
    pub fn queue(ws: &mut Workers, w: u32, req: RequestInfo) {
        ws.enqueue(WorkerId(w), Queued::new(req));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::node::Dispatch;

    fn assert_send<T: Send>() {}

    #[test]
    fn every_policy_is_send_and_names_itself_as_the_catalogue_does() {
        assert_send::<SledgeScale>();
        assert_send::<Srpt>();
        assert_send::<RoundRobin>();
        assert_send::<Jsq>();
        assert_send::<Lld>();
        assert_send::<Sledge>();
        assert_send::<Shinjuku>();
        assert_send::<Darc>();
        let names: Vec<String> = [
            Box::new(SledgeScale::new(Scan::Paper, PreemptTest::Paper)) as Box<dyn Dispatch>,
            Box::new(SledgeScale::new(Scan::Paper, PreemptTest::Code)),
            Box::new(SledgeScale::new(Scan::Plus, PreemptTest::Paper)),
            Box::new(SledgeScale::new(Scan::Plus, PreemptTest::Code)),
            Box::new(Srpt::new()),
            Box::new(RoundRobin::new()),
            Box::new(Jsq::new()),
            Box::new(Lld::new()),
            Box::new(Sledge::new()),
            Box::new(Shinjuku::new(Queues::Single, Resume::SameWorker)),
            Box::new(Shinjuku::new(Queues::Multi, Resume::SameWorker)),
            Box::new(Shinjuku::new(Queues::Single, Resume::AnyWorker)),
            Box::new(Shinjuku::new(Queues::Multi, Resume::AnyWorker)),
        ]
        .iter()
        .map(|p| p.name().to_owned())
        .collect();
        assert_eq!(
            names,
            [
                "sledgescale",
                "sledgescale-code",
                "sledgescale+",
                "sledgescale+-code",
                "srpt",
                "rr",
                "jsq",
                "lld",
                "sledge",
                "shinjuku",
                "shinjuku-mq",
                "shinjuku-any",
                "shinjuku-mq-any"
            ]
        );
    }
}
