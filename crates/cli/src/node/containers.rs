//! `node serve`'s containers: which functions run in them, how their times
//! scale, and what keeps them.

use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::cluster::catalog::keep_alive;
use faasched_lab::cluster::live::function_table;
use faasched_lab::node::live::NodeContainers;
use faasched_live::node::containers::ColdStart;
use faasched_workload::cluster::FunctionTable;
use std::path::Path;

/// A node's containers, as a cluster's server keeps them.
#[derive(ClapArgs, Debug)]
pub struct ContainerArgs {
    /// Run the functions of this table in containers: a live cluster
    /// workload's (`functionbench`: ten copies of each function of CH-RLU's
    /// Table 1, `aes-encryption-0` ..., as `cluster gateway` routes them) or
    /// a table CSV (`name,memory_mb,warm_ms,cold_ms`).
    /// A request names its function in `x-faasched-function`; the first of
    /// a function starts a container cold (its module compiled again, then
    /// the wait of --cold-wait), later ones find it warm while the
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
    /// What a cold start waits after compiling, as a share of the
    /// function's (scaled) cold − warm time: what starting a container
    /// costs a platform beyond a WebAssembly compile.
    #[arg(long, default_value_t = 1.0, requires = "functions")]
    cold_wait: f64,
}

impl ContainerArgs {
    /// The containers of a node with `memory_mb` for them; `None` without
    /// --functions. Errors name the option.
    pub fn containers(&self, memory_mb: u64) -> Result<Option<NodeContainers>> {
        let Some(functions) = &self.functions else {
            return Ok(None);
        };
        if !(self.cold_wait.is_finite() && self.cold_wait >= 0.0) {
            bail!("--cold-wait {}: give a share of 0 or more", self.cold_wait);
        }
        let table = if Path::new(functions).is_file() {
            FunctionTable::read_csv(Path::new(functions))
                .with_context(|| format!("--functions {functions}"))?
        } else {
            function_table(functions).context("--functions")?
        };
        Ok(Some(NodeContainers {
            table: table.scaled(self.time_scale).context("--time-scale")?,
            memory_mb,
            keep_alive: keep_alive(&self.keep_alive).context("--keep-alive")?,
            cold_start: ColdStart {
                scale: self.cold_wait,
            },
        }))
    }
}
