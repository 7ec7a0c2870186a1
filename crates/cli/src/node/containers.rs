//! `node serve`'s containers: which functions run in them, how their times
//! scale, and what keeps them.

use clap::Args as ClapArgs;
use faasched_lab::node::serve::ContainerOptions;

/// A node's containers, as a cluster's server keeps them.
#[derive(ClapArgs, Debug)]
pub struct ContainerArgs {
    /// Run the functions of this table in containers: a live cluster
    /// workload's (`functionbench`: ten copies of each function of CH-RLU's
    /// Table 1, `aes-encryption-0` ..., as `cluster gateway` routes them) or
    /// a table CSV (`name,memory_mb,warm_ms,cold_ms`).
    /// A request names its function in `x-faasched-function`; the first of
    /// a function starts a container cold (its code loaded again, then the
    /// wait of --cold-wait), later ones find it warm while the
    /// keep-alive keeps it within --memory-mb. Without it, no containers.
    #[arg(long, value_name = "NAME|FILE")]
    functions: Option<String>,
    /// Multiply the table's warm and cold times by this, so that its
    /// seconds fit a run on this machine.
    #[arg(long, default_value_t = 0.01, requires = "functions")]
    time_scale: f64,
    /// The keep-alive policy of the containers: greedy-dual, ttl or lru.
    #[arg(long, default_value = "greedy-dual", requires = "functions")]
    keep_alive: String,
    /// What a cold start waits after loading the function's code, as a
    /// share of the function's (scaled) cold − warm time: what starting a
    /// container (a process, a language runtime) costs a platform beyond
    /// loading WebAssembly. By default 1 for a built-in standing in for
    /// the table's function (`spin`, whose own load is no function's) and
    /// 0 for a real function, whose cold start is its load: from
    /// --cache-dir if the node has one, else a compile. Given (0 to 100),
    /// the share for every function.
    #[arg(long, requires = "functions")]
    cold_wait: Option<f64>,
}

impl ContainerArgs {
    /// The containers as the lab takes them; `None` without --functions.
    pub fn options(self) -> Option<ContainerOptions> {
        Some(ContainerOptions {
            functions: self.functions?,
            time_scale: self.time_scale,
            keep_alive: self.keep_alive,
            cold_wait: self.cold_wait,
        })
    }
}
