//! The random graph bfs, mst and pagerank work on, as the ALPS suite's graph
//! functions build one with igraph before their algorithm: a preferential
//! attachment (Barabási–Albert) graph, so degrees are skewed like real
//! networks', seeded so that the same `n` is the same graph everywhere.
//! Building it is part of every run, as in the originals.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::hint::black_box;

/// Seed of every graph: a run at `n` is the same work on every machine.
const SEED: u64 = 0x6661_6173_6368_6564;
/// Edges each new node brings (igraph's `m`); the mean degree is twice this.
const EDGES_PER_NODE: usize = 4;
/// Weights are drawn from `1..=MAX_WEIGHT` (mst needs them).
const MAX_WEIGHT: u32 = 1_000;

/// One undirected, weighted edge.
#[derive(Clone, Copy, Debug)]
pub(super) struct Edge {
    pub a: u32,
    pub b: u32,
    pub weight: u32,
}

/// A graph as its edge list (what mst sorts).
pub(super) struct Graph {
    pub nodes: usize,
    pub edges: Vec<Edge>,
}

/// A graph as adjacency lists in one array (compressed sparse rows: what bfs
/// and pagerank walk): node `v`'s neighbours are `targets[starts[v]..starts[v + 1]]`.
pub(super) struct Adjacency {
    pub starts: Vec<usize>,
    pub targets: Vec<u32>,
}

impl Graph {
    /// The seeded graph on `n` nodes: node `v` > 0 links to up to
    /// `EDGES_PER_NODE` earlier nodes, each drawn in proportion to its degree
    /// (the endpoint of a uniformly drawn edge end), the first to node 0.
    pub fn random(n: u64) -> Graph {
        let nodes = usize::try_from(black_box(n)).expect("n is at most max_n");
        let mut rng = Pcg64Mcg::seed_from_u64(SEED);
        let mut edges = Vec::with_capacity(nodes * EDGES_PER_NODE);
        // Every edge's two ends: a uniform draw from it is a degree-weighted
        // draw of a node.
        let mut ends: Vec<u32> = Vec::with_capacity(2 * nodes * EDGES_PER_NODE);
        for v in 1..nodes {
            let first = ends.len();
            for _ in 0..EDGES_PER_NODE.min(v) {
                let u = if first == 0 {
                    0
                } else {
                    ends[rng.random_range(0..first)]
                };
                let weight = rng.random_range(1..=MAX_WEIGHT);
                let v = v as u32;
                edges.push(Edge { a: u, b: v, weight });
                ends.extend([u, v]);
            }
        }
        Graph { nodes, edges }
    }

    /// The adjacency lists, each edge in both directions.
    pub fn adjacency(&self) -> Adjacency {
        let mut starts = vec![0; self.nodes + 1];
        for e in &self.edges {
            starts[e.a as usize + 1] += 1;
            starts[e.b as usize + 1] += 1;
        }
        for v in 0..self.nodes {
            starts[v + 1] += starts[v];
        }
        let mut next = starts.clone();
        let mut targets = vec![0; 2 * self.edges.len()];
        for e in &self.edges {
            for (from, to) in [(e.a, e.b), (e.b, e.a)] {
                targets[next[from as usize]] = to;
                next[from as usize] += 1;
            }
        }
        Adjacency { starts, targets }
    }
}

impl Adjacency {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.starts.len() - 1
    }

    /// Node `v`'s neighbours.
    pub fn neighbours(&self, v: usize) -> &[u32] {
        &self.targets[self.starts[v]..self.starts[v + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_is_seeded_connected_and_skewed() {
        let g = Graph::random(2_000);
        assert_eq!(g.edges.len(), 4 * 2_000 - 10);
        let same = Graph::random(2_000);
        assert!(
            g.edges
                .iter()
                .zip(&same.edges)
                .all(|(x, y)| (x.a, x.b, x.weight) == (y.a, y.b, y.weight))
        );
        let adj = g.adjacency();
        assert_eq!(adj.nodes(), 2_000);
        assert!((0..2_000).all(|v| !adj.neighbours(v).is_empty()));
        let max_degree = (0..2_000).map(|v| adj.neighbours(v).len()).max();
        assert!(max_degree > Some(50), "hubs: {max_degree:?}");
    }

    #[test]
    fn tiny_graphs() {
        assert_eq!(Graph::random(0).adjacency().nodes(), 0);
        assert_eq!(Graph::random(1).edges.len(), 0);
        assert_eq!(Graph::random(2).adjacency().neighbours(1), &[0]);
    }
}
