//! bfs: breadth-first search of a random graph from node 0, the ALPS suite's
//! graph traversal: pointer chasing through memory, little arithmetic.

use super::graph::Graph;
use super::{Spec, Unit};

pub(super) const SPEC: Spec = Spec {
    name: "bfs",
    description: "breadth-first search of a seeded random graph (memory-bound traversal)",
    param: "nodes of the graph, mean degree 8",
    default_n: 100_000,
    max_n: 4_000_000,
    unit: Unit::At(500),
    sweep: [2_000, 8_000, 32_000],
    run,
};

/// Builds the graph, searches it, and sums every reached node's distance and
/// the number reached.
fn run(n: u64) -> u64 {
    let graph = Graph::random(n).adjacency();
    if graph.nodes() == 0 {
        return 0;
    }
    let mut distance = vec![u32::MAX; graph.nodes()];
    let mut queue = Vec::with_capacity(graph.nodes());
    distance[0] = 0;
    queue.push(0u32);
    let mut head = 0;
    while let Some(&v) = queue.get(head) {
        head += 1;
        let d = distance[v as usize] + 1;
        for &u in graph.neighbours(v as usize) {
            if distance[u as usize] == u32::MAX {
                distance[u as usize] = d;
                queue.push(u);
            }
        }
    }
    let total: u64 = queue.iter().map(|&v| u64::from(distance[v as usize])).sum();
    total.wrapping_mul(1 << 32).wrapping_add(queue.len() as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reaches_every_node() {
        // Distances sum in the high half, nodes reached in the low half.
        assert_eq!(super::run(1_000) & 0xffff_ffff, 1_000);
        assert_eq!(super::run(2), (1 << 32) + 2);
        assert_eq!(super::run(0), 0);
    }
}
