//! Nodes that fail between polls (invariant 8). One that refuses a
//! connection is taken out of the up nodes at once, and the invocation it
//! refused goes to the router's next choice: no byte of it reached the
//! node, so it has not run. One that fails a forward after its request
//! went out (a reset, no answer in time) is probed at once, and taken out
//! if the probe fails too; that invocation is never sent again, as it may
//! have run.

use super::link::NodeLink;
use super::poll::load;
use super::{Inner, lock};
use crate::wire::LoadReport;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a probe of a suspected node waits for its load report: 1 s,
/// so that a node that stopped answering is out within about a second.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The nodes to probe, and the wake-up of the task that probes them.
#[derive(Default)]
pub(super) struct Suspects {
    nodes: std::sync::Mutex<BTreeSet<usize>>,
    wake: tokio::sync::Notify,
}

impl Inner {
    /// Takes node `node` out of the up nodes at once, as the router is
    /// told: a static one down until a report takes it back, a registered
    /// one dropped until it registers again. Nothing if it is out already.
    pub(super) fn take_out(&self, node: usize) {
        let mut state = lock(&self.state);
        let state = &mut *state;
        if !(state.table.contains(node) && state.table.is_up(node)) {
            return;
        }
        let epoch = state.table.epoch();
        state.take_down(node);
        self.metrics.taken_out.fetch_add(1, Ordering::Relaxed);
        state.changed_since(epoch, self.now());
    }

    /// Asks for node `node` to be probed at once.
    pub(super) fn suspect(&self, node: usize) {
        lock(&self.suspects.nodes).insert(node);
        self.suspects.wake.notify_one();
    }
}

/// `link`'s node's load report, if it gives one within [`PROBE_TIMEOUT`];
/// what went wrong otherwise.
pub(super) async fn probe(link: &NodeLink) -> Result<LoadReport, String> {
    tokio::time::timeout(PROBE_TIMEOUT, load(link))
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {PROBE_TIMEOUT:?}")))
}

/// Probes the suspected nodes as they come, all at once, each for at most
/// [`PROBE_TIMEOUT`]; a node whose probe fails is taken out. A node
/// suspected many times while a probe runs is probed once more after it.
pub(super) async fn probe_suspects(inner: Arc<Inner>) {
    loop {
        inner.suspects.wake.notified().await;
        let suspects = std::mem::take(&mut *lock(&inner.suspects.nodes));
        let mut probes = tokio::task::JoinSet::new();
        for node in suspects {
            let Some(link) = lock(&inner.state).links.get(&node).cloned() else {
                continue;
            };
            probes.spawn(async move { (node, probe(&link).await.is_ok()) });
        }
        while let Some(probed) = probes.join_next().await {
            if let Ok((node, false)) = probed {
                inner.take_out(node);
            }
        }
    }
}
