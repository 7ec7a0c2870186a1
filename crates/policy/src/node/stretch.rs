//! A policy's own times stretched with its workload's.
//!
//! A live node's threads cannot keep a workload of µs, so a run can stretch
//! every time of the workload by a factor (work, deadlines, the gaps
//! between arrivals). For the slowed-down run to be the same experiment,
//! the times a policy keeps of its own — the workers' local quantum, the
//! dispatcher's quantum — stretch with it; everything else a policy reads
//! (deadlines, estimates, slack) comes from the requests, already
//! stretched.

use faasched_model::node::{
    Decision, Dispatch, Local, RequestId, RequestInfo, RequestOutcome, WorkerId, Workers,
};
use faasched_model::{Nanos, Time};

/// `inner` with its quanta multiplied by a factor.
pub struct Stretched<D> {
    inner: D,
    factor: u64,
}

impl<D: Dispatch> Stretched<D> {
    /// `inner`, its quanta `factor` times longer.
    pub fn new(inner: D, factor: u32) -> Stretched<D> {
        Stretched {
            inner,
            factor: u64::from(factor),
        }
    }

    fn stretch(&self, quantum: Option<Nanos>) -> Option<Nanos> {
        quantum.map(|q| q.saturating_mul(self.factor))
    }
}

impl<D: Dispatch> Dispatch for Stretched<D> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn local(&self) -> Local {
        let local = self.inner.local();
        Local {
            quantum: self.stretch(local.quantum),
            ..local
        }
    }

    fn on_request(&mut self, now: Time, req: &RequestInfo, workers: &Workers) -> Decision {
        self.inner.on_request(now, req, workers)
    }

    fn on_idle(
        &mut self,
        now: Time,
        worker: WorkerId,
        workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        self.inner.on_idle(now, worker, workers, out);
    }

    fn quantum(&self) -> Option<Nanos> {
        self.stretch(self.inner.quantum())
    }

    fn on_quantum(
        &mut self,
        now: Time,
        worker: WorkerId,
        workers: &Workers,
        out: &mut Vec<RequestId>,
    ) {
        self.inner.on_quantum(now, worker, workers, out);
    }

    fn on_returned(&mut self, now: Time, req: &RequestInfo, worker: WorkerId) -> Option<WorkerId> {
        self.inner.on_returned(now, req, worker)
    }

    fn on_finish(&mut self, now: Time, outcome: &RequestOutcome) {
        self.inner.on_finish(now, outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{PreemptTest, Queues, Resume, RoundRobin, Scan, Shinjuku, SledgeScale};
    use faasched_model::{MS, US};

    #[test]
    fn quanta_stretch_and_nothing_else_changes() {
        let rr = Stretched::new(RoundRobin::new(), 10);
        assert_eq!(rr.name(), "rr");
        assert_eq!(rr.local().quantum, Some(10 * MS));
        assert_eq!(rr.local().order, RoundRobin::new().local().order);
        assert_eq!(rr.quantum(), None);
        let shinjuku = Stretched::new(Shinjuku::new(Queues::Single, Resume::SameWorker), 10);
        assert_eq!(shinjuku.quantum(), Some(150 * US));
        assert_eq!(shinjuku.local().quantum, None);
        let edf = Stretched::new(SledgeScale::new(Scan::Paper, PreemptTest::Paper), 10);
        assert_eq!((edf.local().quantum, edf.quantum()), (None, None));
    }
}
