//! Workload CSV v1 (placeholder).
