//! What a dispatcher may know of a workload in advance: per function, its
//! mean work and its shares of requests and of work (DARC reserves workers
//! from it; the capacity search starts from it).

/// One function's profile.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionProfile {
    /// Its name.
    pub name: String,
    /// Mean work of its requests, ns.
    pub mean_work: f64,
    /// Its share of the requests, in [0, 1].
    pub request_share: f64,
    /// Its share of the work, in [0, 1].
    pub work_share: f64,
}

/// Per-function profiles, in function-id order: the i-th is `FunctionId(i)`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Profile {
    functions: Vec<FunctionProfile>,
}

impl Profile {
    /// A profile of these functions, in function-id order.
    pub fn new(functions: Vec<FunctionProfile>) -> Profile {
        Profile { functions }
    }

    /// The functions, in id order.
    pub fn functions(&self) -> &[FunctionProfile] {
        &self.functions
    }

    /// Mean work per request, ns: Σ request share × mean work.
    pub fn mean_work(&self) -> f64 {
        self.functions
            .iter()
            .map(|f| f.request_share * f.mean_work)
            .sum()
    }

    /// Requests per second `workers` workers can serve at most: workers /
    /// mean work, dispatching and other overheads left out; 0 for a
    /// profile without work.
    pub fn capacity(&self, workers: u32) -> f64 {
        let mean = self.mean_work();
        if mean > 0.0 {
            f64::from(workers) * faasched_model::SEC as f64 / mean
        } else {
            0.0
        }
    }
}
