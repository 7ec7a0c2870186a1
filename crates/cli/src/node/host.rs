//! Where a live node's threads and sandboxes run, and their limits: what
//! `node serve`, `node replay` and `node compare` share.

use anyhow::Result;
use clap::Args as ClapArgs;
use faasched_lab::node::live::{
    CpuList, DEFAULT_MAX_COMPILE, DEFAULT_MAX_MODULES, DEFAULT_MAX_OUTPUT, Host, positive_ms,
};

/// The live node's threads and sandboxes.
#[derive(ClapArgs, Debug)]
pub struct HostArgs {
    /// CPUs to pin the threads to, dispatchers first, then workers
    /// (`2-7` or `2,3,4`); by default they are not pinned.
    #[arg(long, value_name = "LIST")]
    cpus: Option<CpuList>,
    /// Idle workers and dispatchers spin instead of sleeping: lower
    /// latency, a busy core each.
    #[arg(long)]
    poll: bool,
    /// CPU time one request may use before it is stopped, ms.
    #[arg(long, default_value = "1000", value_parser = positive_ms)]
    cpu_limit_ms: u64,
    /// Linear memory one sandbox may grow to, MiB.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    memory_limit_mib: u64,
    /// Sandboxes alive at once (running or preempted); a request beyond
    /// them is refused as overloaded.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_sandboxes: u32,
    /// `spin`'s steps per ms of CPU, instead of measuring them at start:
    /// the value another run printed, so that runs made apart spin the
    /// same steps for the same work.
    #[arg(long, value_name = "STEPS", value_parser = clap::value_parser!(u64).range(1..))]
    spin_steps_per_ms: Option<u64>,
}

impl HostArgs {
    /// The host as the lab takes it.
    pub fn host(&self) -> Result<Host> {
        Ok(Host {
            cpus: self.cpus.clone().map(|l| l.0).unwrap_or_default(),
            poll: self.poll,
            cpu_limit: self.cpu_limit_ms,
            memory_limit: self.memory_limit_mib << 20,
            max_sandboxes: self.max_sandboxes,
            max_modules: DEFAULT_MAX_MODULES,
            max_compile: DEFAULT_MAX_COMPILE,
            max_output: DEFAULT_MAX_OUTPUT,
            cache: None,
            spin_steps_per_ms: self.spin_steps_per_ms,
        })
    }
}
