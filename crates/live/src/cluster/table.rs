//! The gateway's nodes as its router sees them: the last load each
//! reported (stale, as the router expects), the gateway's own count of
//! requests in flight on each, and which are up.
//!
//! The invariants:
//!
//! 1. A node is up from the start, seen as idle with one core and
//!    [`DEFAULT_MEMORY_MB`] until its first report.
//! 2. A report replaces the node's cores, memory and load, stamps it with
//!    the gateway's time, clears its misses, and takes a down node back.
//! 3. A poll the node misses counts; [`DOWN_AFTER_MISSES`] in a row take it
//!    down.
//! 4. The router is shown the up nodes only, renumbered from 0 in node
//!    order ([`NodeTable::servers`]), so no router, whatever it reads,
//!    picks a down node: the routers route again among the live ones. The
//!    [`NodeTable::epoch`] moves whenever that set changes, so that a
//!    server id read before a change is never taken for one after it.

use crate::node::ingress::LoadReport;
use crate::node::ingress::load::DEFAULT_MEMORY_MB;
use faasched_model::Time;
use faasched_model::cluster::{ServerId, ServerView, Servers};

/// Polls in a row a node may miss before it is taken down: 3, the
/// gateway's one knob of patience.
pub const DOWN_AFTER_MISSES: u32 = 3;

/// One node's state.
#[derive(Clone, Debug)]
struct Node {
    view: ServerView,
    misses: u32,
    up: bool,
}

/// Every node, by its index in the gateway's `--node` list.
#[derive(Clone, Debug)]
pub struct NodeTable {
    nodes: Vec<Node>,
    /// The up nodes' indices, by their server id in `servers`.
    live: Vec<usize>,
    servers: Servers,
    epoch: u64,
}

impl NodeTable {
    /// `n` nodes, all up and idle (step 1).
    pub fn new(n: usize) -> NodeTable {
        let view = ServerView {
            cores: 1,
            memory_mb: DEFAULT_MEMORY_MB,
            load: 0.0,
            published: 0,
            running: 0,
        };
        let nodes = vec![
            Node {
                view,
                misses: 0,
                up: true,
            };
            n
        ];
        let mut table = NodeTable {
            nodes,
            live: Vec::new(),
            servers: Servers::default(),
            epoch: 0,
        };
        table.rebuild();
        table
    }

    /// How many nodes, up or down.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `node` reported `report` at `now` (step 2). Returns whether
    /// that took it back up.
    ///
    /// # Panics
    ///
    /// If `node` is no node's index.
    pub fn report(&mut self, node: usize, report: &LoadReport, now: Time) -> bool {
        let n = &mut self.nodes[node];
        n.view.cores = report.cores.max(1);
        n.view.memory_mb = report.memory_mb;
        n.view.load = if report.load.is_finite() {
            report.load.max(0.0)
        } else {
            0.0
        };
        n.view.published = now;
        n.misses = 0;
        let back = !n.up;
        n.up = true;
        if back {
            self.rebuild();
        } else if let Some(s) = self.server_of(node) {
            *self.servers.get_mut(s) = self.nodes[node].view.clone();
        }
        back
    }

    /// Node `node` missed a poll (step 3). Returns whether that took it
    /// down.
    ///
    /// # Panics
    ///
    /// If `node` is no node's index.
    pub fn miss(&mut self, node: usize) -> bool {
        let n = &mut self.nodes[node];
        n.misses = n.misses.saturating_add(1);
        if n.up && n.misses >= DOWN_AFTER_MISSES {
            n.up = false;
            self.rebuild();
            true
        } else {
            false
        }
    }

    /// One more request in flight on `node`, sent by the gateway.
    pub fn start(&mut self, node: usize) {
        self.nodes[node].view.running += 1;
        self.sync_running(node);
    }

    /// One request fewer in flight on `node`.
    pub fn finish(&mut self, node: usize) {
        let running = &mut self.nodes[node].view.running;
        *running = running.saturating_sub(1);
        self.sync_running(node);
    }

    /// The up nodes as the router sees them (step 4).
    pub fn servers(&self) -> &Servers {
        &self.servers
    }

    /// The node behind server `s` of [`NodeTable::servers`].
    ///
    /// # Panics
    ///
    /// If `s` is no server of the current view.
    pub fn node_of(&self, s: ServerId) -> usize {
        self.live[s.0 as usize]
    }

    /// Node `node`'s server id in the current view, if it is up.
    pub fn server_of(&self, node: usize) -> Option<ServerId> {
        self.live
            .iter()
            .position(|&n| n == node)
            .map(|i| ServerId(i as u32))
    }

    /// Moves whenever the set of up nodes changes.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether `node` is up.
    pub fn is_up(&self, node: usize) -> bool {
        self.nodes[node].up
    }

    /// Polls `node` missed in a row.
    pub fn misses(&self, node: usize) -> u32 {
        self.nodes[node].misses
    }

    /// Node `node` as last reported, with the gateway's in-flight count.
    pub fn view(&self, node: usize) -> &ServerView {
        &self.nodes[node].view
    }

    fn sync_running(&mut self, node: usize) {
        if let Some(s) = self.server_of(node) {
            self.servers.get_mut(s).running = self.nodes[node].view.running;
        }
    }

    fn rebuild(&mut self) {
        self.live = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].up)
            .collect();
        self.servers = Servers::new(
            self.live
                .iter()
                .map(|&i| self.nodes[i].view.clone())
                .collect(),
        );
        self.epoch += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(load: f64) -> LoadReport {
        LoadReport {
            cores: 2,
            memory_mb: 1024,
            load,
            published_ms: 0,
            seq: 1,
        }
    }

    #[test]
    fn reports_replace_the_view_and_stamp_it_with_the_gateway_time() {
        let mut t = NodeTable::new(2);
        assert_eq!(t.servers().len(), 2);
        assert_eq!(t.view(0).cores, 1);
        assert!(!t.report(1, &report(0.75), 40));
        let v = t.servers().get(ServerId(1));
        assert_eq!(
            (v.cores, v.memory_mb, v.load, v.published),
            (2, 1024, 0.75, 40)
        );
        // A report that is no number reads as idle, never as a NaN a
        // router would compare.
        t.report(0, &report(f64::NAN), 41);
        assert_eq!(t.servers().get(ServerId(0)).load, 0.0);
        t.start(1);
        t.start(1);
        t.finish(1);
        assert_eq!(t.servers().get(ServerId(1)).running, 1);
        t.finish(0);
        assert_eq!(t.view(0).running, 0);
    }

    #[test]
    fn three_misses_in_a_row_take_a_node_down_and_a_report_brings_it_back() {
        let mut t = NodeTable::new(3);
        let e0 = t.epoch();
        assert!(!t.miss(1));
        assert!(!t.miss(1));
        // A report between misses starts the count again.
        t.report(1, &report(0.5), 10);
        assert_eq!(t.misses(1), 0);
        assert!(!t.miss(1) && !t.miss(1));
        assert!(t.miss(1), "the third miss in a row");
        assert!(!t.is_up(1) && !t.miss(1));
        assert_ne!(t.epoch(), e0);
        // The router sees nodes 0 and 2 as servers 0 and 1.
        assert_eq!(t.servers().len(), 2);
        assert_eq!((t.node_of(ServerId(0)), t.node_of(ServerId(1))), (0, 2));
        assert_eq!(t.server_of(1), None);
        assert_eq!(t.server_of(2), Some(ServerId(1)));
        // Requests in flight on a down node still finish on it.
        t.start(1);
        t.finish(1);
        let e1 = t.epoch();
        assert!(t.report(1, &report(0.25), 20), "taken back");
        assert!(t.is_up(1) && t.epoch() != e1);
        assert_eq!(t.servers().len(), 3);
        assert_eq!(t.servers().get(ServerId(1)).load, 0.25);
    }
}
