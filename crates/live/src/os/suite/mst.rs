//! mst: minimum spanning tree of a random weighted graph by Kruskal's
//! algorithm, the ALPS suite's sort-heavy graph function: a sort of every
//! edge, then union-find.

use super::graph::Graph;
use super::{Spec, Unit};

pub(super) const SPEC: Spec = Spec {
    name: "mst",
    description: "minimum spanning tree of a seeded random weighted graph (Kruskal: sort, union-find)",
    param: "nodes of the graph, mean degree 8",
    default_n: 100_000,
    max_n: 4_000_000,
    unit: Unit::At(300),
    sweep: [2_000, 8_000, 32_000],
    run,
};

/// Builds the graph and returns its spanning tree's weight (high bits) and
/// edge count (low 24 bits).
fn run(n: u64) -> u64 {
    let Graph { nodes, mut edges } = Graph::random(n);
    edges.sort_unstable_by_key(|e| e.weight);
    let mut sets = Sets::new(nodes);
    let (mut weight, mut count) = (0u64, 0u64);
    for e in &edges {
        if sets.union(e.a, e.b) {
            weight += u64::from(e.weight);
            count += 1;
        }
    }
    (weight << 24).wrapping_add(count)
}

/// Disjoint sets of nodes (union by size, path halving).
struct Sets {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl Sets {
    fn new(nodes: usize) -> Sets {
        Sets {
            parent: (0..nodes as u32).collect(),
            size: vec![1; nodes],
        }
    }

    fn root(&mut self, mut v: u32) -> u32 {
        while self.parent[v as usize] != v {
            let grandparent = self.parent[self.parent[v as usize] as usize];
            self.parent[v as usize] = grandparent;
            v = grandparent;
        }
        v
    }

    /// Joins the sets of `a` and `b`; false if they were one already.
    fn union(&mut self, a: u32, b: u32) -> bool {
        let (a, b) = (self.root(a), self.root(b));
        if a == b {
            return false;
        }
        let (small, big) = if self.size[a as usize] < self.size[b as usize] {
            (a, b)
        } else {
            (b, a)
        };
        self.parent[small as usize] = big;
        self.size[big as usize] += self.size[small as usize];
        true
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn spans_every_node() {
        // A connected graph's spanning tree has nodes - 1 edges.
        assert_eq!(super::run(1_000) & 0xff_ffff, 999);
        assert_eq!(super::run(1), 0);
    }
}
