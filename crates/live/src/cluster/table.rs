//! The gateway's nodes as its router sees them: the last load each
//! reported (stale, as the router expects), the gateway's own count of
//! requests in flight on each, and which are up.
//!
//! The invariants:
//!
//! 1. A node is up from the moment it joins (given at start, or
//!    registered), seen as idle with one core and [`DEFAULT_MEMORY_MB`]
//!    until its first report. Its id is given in order of joining and
//!    never reused, so that a request in flight on a node that left never
//!    names another.
//! 2. A report replaces the node's cores, memory and load, stamps it with
//!    the gateway's time, clears its misses, and takes a down node back.
//! 3. A poll the node misses counts; [`DOWN_AFTER_MISSES`] in a row take it
//!    down. A [`Membership::Static`] node stays in the table, down, until a
//!    report takes it back; a [`Membership::Registered`] one is dropped
//!    from the table then (see [`Membership`] for why), and must register
//!    again.
//! 4. The router is shown the up nodes only, renumbered from 0 in id order
//!    ([`NodeTable::servers`]), so no router, whatever it reads, picks a
//!    down or dropped node: the routers route again among the live ones.
//!    The [`NodeTable::epoch`] moves whenever that set changes (a node
//!    down, back, joining or leaving), so that a server id read before a
//!    change is never taken for one after it.
//! 5. Requests in flight on a node that left finish on nothing: the table
//!    forgets them with the node.

use crate::node::ingress::load::DEFAULT_MEMORY_MB;
use crate::wire::LoadReport;
use faasched_model::Time;
use faasched_model::cluster::{ServerId, ServerView, Servers};
use std::collections::BTreeMap;

/// Polls in a row a node may miss before it is taken down: 3, the
/// gateway's one knob of patience.
pub const DOWN_AFTER_MISSES: u32 = 3;

/// How a node came into the table, and so how it leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    /// Given when the gateway started (`--node`): kept for the gateway's
    /// life, down after [`DOWN_AFTER_MISSES`] and back on its next report,
    /// since nothing would add it again.
    Static,
    /// Registered by the node itself (`PUT /nodes/{addr}`): dropped from
    /// the table once it is down, after [`DOWN_AFTER_MISSES`] missed polls.
    /// A registered node heartbeats its registration every load period,
    /// so one that is alive again is added again within a period; keeping
    /// a dead one down would only grow the table with nodes that left
    /// without saying so (a crash, a lost network) and never come back
    /// on that address.
    Registered,
}

/// What a missed poll did to its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// Counted; the node is as it was.
    Counted,
    /// It took a static node down.
    Down,
    /// It took a registered node down, and so out of the table.
    Dropped,
}

/// One node's state.
#[derive(Clone, Debug)]
struct Node {
    view: ServerView,
    misses: u32,
    up: bool,
    membership: Membership,
}

/// Every node, by its id (invariant 1).
#[derive(Clone, Debug)]
pub struct NodeTable {
    nodes: BTreeMap<usize, Node>,
    /// The next node's id.
    next: usize,
    /// The up nodes' ids, by their server id in `servers`.
    live: Vec<usize>,
    servers: Servers,
    epoch: u64,
}

impl Default for NodeTable {
    fn default() -> NodeTable {
        NodeTable::new(0)
    }
}

impl NodeTable {
    /// `n` static nodes, ids 0 to `n - 1`, all up and idle (step 1).
    pub fn new(n: usize) -> NodeTable {
        let mut table = NodeTable {
            nodes: BTreeMap::new(),
            next: 0,
            live: Vec::new(),
            servers: Servers::default(),
            epoch: 0,
        };
        for _ in 0..n {
            table.insert(Membership::Static);
        }
        table.rebuild();
        table
    }

    /// A new node, up and idle (step 1); its id.
    pub fn add(&mut self, membership: Membership) -> usize {
        let id = self.insert(membership);
        self.rebuild();
        id
    }

    fn insert(&mut self, membership: Membership) -> usize {
        let id = self.next;
        self.next += 1;
        let view = ServerView {
            cores: 1,
            memory_mb: DEFAULT_MEMORY_MB,
            load: 0.0,
            published: 0,
            running: 0,
        };
        self.nodes.insert(
            id,
            Node {
                view,
                misses: 0,
                up: true,
                membership,
            },
        );
        id
    }

    /// Node `node` leaves: a registered node is dropped from the table, a
    /// static one taken down (its next report takes it back). Returns
    /// whether it was in the table.
    pub fn leave(&mut self, node: usize) -> bool {
        let Some(n) = self.nodes.get_mut(&node) else {
            return false;
        };
        let was_up = n.up;
        match n.membership {
            Membership::Static => n.up = false,
            Membership::Registered => {
                self.nodes.remove(&node);
            }
        }
        if was_up {
            self.rebuild();
        }
        true
    }

    /// Takes `node` out of the table whatever its membership: a static
    /// node found to be another's alias. Returns whether it was there.
    pub fn remove(&mut self, node: usize) -> bool {
        let Some(n) = self.nodes.remove(&node) else {
            return false;
        };
        if n.up {
            self.rebuild();
        }
        true
    }

    /// How many nodes, up or down.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes' ids, in order.
    pub fn ids(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.keys().copied()
    }

    /// Whether node `node` is in the table.
    pub fn contains(&self, node: usize) -> bool {
        self.nodes.contains_key(&node)
    }

    /// Node `node` reported `report` at `now` (step 2). Returns whether
    /// that took it back up; a node no longer in the table is left out.
    pub fn report(&mut self, node: usize, report: &LoadReport, now: Time) -> bool {
        let Some(n) = self.nodes.get_mut(&node) else {
            return false;
        };
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
        let view = n.view.clone();
        if back {
            self.rebuild();
        } else if let Some(s) = self.server_of(node) {
            *self.servers.get_mut(s) = view;
        }
        back
    }

    /// Node `node` missed a poll (step 3); a node no longer in the table
    /// has nothing to miss (`None`).
    pub fn miss(&mut self, node: usize) -> Option<Missed> {
        let n = self.nodes.get_mut(&node)?;
        n.misses = n.misses.saturating_add(1);
        if !(n.up && n.misses >= DOWN_AFTER_MISSES) {
            return Some(Missed::Counted);
        }
        let missed = match n.membership {
            Membership::Static => {
                n.up = false;
                Missed::Down
            }
            Membership::Registered => {
                self.nodes.remove(&node);
                Missed::Dropped
            }
        };
        self.rebuild();
        Some(missed)
    }

    /// One more request in flight on `node`, sent by the gateway.
    ///
    /// # Panics
    ///
    /// If `node` is not in the table: a request is sent only to a node the
    /// router just chose.
    pub fn start(&mut self, node: usize) {
        self.node_mut(node).view.running += 1;
        self.sync_running(node);
    }

    /// One request fewer in flight on `node`; nothing if it left (step 5).
    pub fn finish(&mut self, node: usize) {
        let Some(n) = self.nodes.get_mut(&node) else {
            return;
        };
        n.view.running = n.view.running.saturating_sub(1);
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
    ///
    /// # Panics
    ///
    /// If `node` is not in the table.
    pub fn is_up(&self, node: usize) -> bool {
        self.node(node).up
    }

    /// Polls `node` missed in a row.
    ///
    /// # Panics
    ///
    /// If `node` is not in the table.
    pub fn misses(&self, node: usize) -> u32 {
        self.node(node).misses
    }

    /// How `node` joined.
    ///
    /// # Panics
    ///
    /// If `node` is not in the table.
    pub fn membership(&self, node: usize) -> Membership {
        self.node(node).membership
    }

    /// Node `node` as last reported, with the gateway's in-flight count.
    ///
    /// # Panics
    ///
    /// If `node` is not in the table.
    pub fn view(&self, node: usize) -> &ServerView {
        &self.node(node).view
    }

    fn node(&self, node: usize) -> &Node {
        self.nodes
            .get(&node)
            .unwrap_or_else(|| panic!("node {node} is not in the table"))
    }

    fn node_mut(&mut self, node: usize) -> &mut Node {
        self.nodes
            .get_mut(&node)
            .unwrap_or_else(|| panic!("node {node} is not in the table"))
    }

    fn sync_running(&mut self, node: usize) {
        if let Some(s) = self.server_of(node) {
            self.servers.get_mut(s).running = self.nodes[&node].view.running;
        }
    }

    fn rebuild(&mut self) {
        self.live = self
            .nodes
            .iter()
            .filter(|(_, n)| n.up)
            .map(|(&id, _)| id)
            .collect();
        self.servers = Servers::new(
            self.live
                .iter()
                .map(|id| self.nodes[id].view.clone())
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
            node: None,
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
        assert_eq!(t.miss(1), Some(Missed::Counted));
        assert_eq!(t.miss(1), Some(Missed::Counted));
        // A report between misses starts the count again.
        t.report(1, &report(0.5), 10);
        assert_eq!(t.misses(1), 0);
        assert_eq!(t.miss(1), Some(Missed::Counted));
        assert_eq!(t.miss(1), Some(Missed::Counted));
        assert_eq!(t.miss(1), Some(Missed::Down), "the third miss in a row");
        assert!(!t.is_up(1));
        assert_eq!(t.miss(1), Some(Missed::Counted));
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

    #[test]
    fn a_registered_node_is_routed_to_at_once_and_dropped_when_down_a_static_one_kept() {
        let mut t = NodeTable::default();
        assert!(t.is_empty() && t.servers().is_empty());
        let a = t.add(Membership::Registered);
        let e0 = t.epoch();
        assert_eq!(t.servers().len(), 1);
        assert_eq!(t.node_of(ServerId(0)), a);
        assert_eq!(t.membership(a), Membership::Registered);
        let s = t.add(Membership::Static);
        assert_ne!(t.epoch(), e0);
        assert_eq!((t.node_of(ServerId(0)), t.node_of(ServerId(1))), (a, s));
        t.start(a);
        for _ in 1..DOWN_AFTER_MISSES {
            assert_eq!(t.miss(a), Some(Missed::Counted));
            assert_eq!(t.miss(s), Some(Missed::Counted));
        }
        assert_eq!(t.miss(s), Some(Missed::Down));
        assert_eq!(t.miss(a), Some(Missed::Dropped));
        assert!(!t.contains(a) && t.contains(s) && !t.is_up(s));
        assert_eq!(t.ids().collect::<Vec<_>>(), [s]);
        assert!(t.servers().is_empty());
        // Its request in flight finishes on nothing; its late report and
        // misses find nothing.
        t.finish(a);
        assert!(!t.report(a, &report(0.5), 10));
        assert_eq!(t.miss(a), None);
        // Registering again makes it a new node, with a new id.
        let b = t.add(Membership::Registered);
        assert_ne!(b, a);
        assert_eq!(t.servers().len(), 1);
        assert_eq!(t.view(b).running, 0);
        // The static node is taken back by its report.
        assert!(t.report(s, &report(0.25), 20));
        assert_eq!((t.node_of(ServerId(0)), t.node_of(ServerId(1))), (s, b));
    }

    #[test]
    fn a_registered_node_leaving_is_dropped_a_static_one_only_taken_down() {
        let mut t = NodeTable::new(1);
        let r = t.add(Membership::Registered);
        let e0 = t.epoch();
        assert!(t.leave(r));
        assert!(!t.contains(r) && t.epoch() != e0);
        assert!(!t.leave(r), "gone already");
        assert!(t.leave(0));
        assert!(t.contains(0) && !t.is_up(0) && t.servers().is_empty());
        let e1 = t.epoch();
        assert!(t.leave(0));
        assert_eq!(t.epoch(), e1, "the up nodes did not change");
        assert!(t.report(0, &report(0.5), 5));
    }
}
