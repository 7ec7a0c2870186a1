//! pagerank: PageRank of a random graph by power iteration, the ALPS suite's
//! numeric graph function: repeated sweeps of floating-point sums over every
//! edge.

use super::graph::Graph;
use super::{Spec, Unit};

pub(super) const SPEC: Spec = Spec {
    name: "pagerank",
    description: "PageRank of a seeded random graph, 20 power iterations (floating point over edges)",
    param: "nodes of the graph, mean degree 8",
    default_n: 50_000,
    max_n: 4_000_000,
    unit: Unit::At(100),
    sweep: [1_000, 4_000, 16_000],
    run,
};

/// Damping factor (the usual 0.85).
const DAMPING: f64 = 0.85;
/// A fixed number of iterations, rather than until convergence, so the cost
/// is linear in the graph's size.
const ITERATIONS: usize = 20;

/// Builds the graph, ranks its nodes, and returns the ranks' sum in
/// millionths of a node's fair share (a checksum that depends on every rank).
fn run(n: u64) -> u64 {
    let graph = Graph::random(n).adjacency();
    let nodes = graph.nodes();
    if nodes == 0 {
        return 0;
    }
    let uniform = 1.0 / nodes as f64;
    let mut rank = vec![uniform; nodes];
    let mut share = vec![0.0; nodes];
    for _ in 0..ITERATIONS {
        // Each node hands its rank out evenly over its edges; a node with none
        // (only in a one-node graph) hands it to every node.
        let mut dangling = 0.0;
        for (v, s) in share.iter_mut().enumerate() {
            match graph.neighbours(v).len() {
                0 => {
                    dangling += rank[v];
                    *s = 0.0;
                }
                degree => *s = rank[v] / degree as f64,
            }
        }
        let base = (1.0 - DAMPING) * uniform + DAMPING * dangling * uniform;
        for (v, r) in rank.iter_mut().enumerate() {
            let incoming: f64 = graph.neighbours(v).iter().map(|&u| share[u as usize]).sum();
            *r = base + DAMPING * incoming;
        }
    }
    rank.iter()
        .map(|r| (r * nodes as f64 * 1e6).round() as u64)
        .fold(0, u64::wrapping_add)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranks_sum_to_one() {
        // Ranks sum to 1, so the checksum is about a million per node.
        for n in [1, 2, 500] {
            let sum = super::run(n) as f64 / 1e6;
            assert!((sum - n as f64).abs() < 0.01 * n as f64, "{n}: {sum}");
        }
    }
}
