//! Where a live node's threads and sandboxes run, and their limits: what
//! `node serve`, `node replay` and `node compare` share.

use anyhow::{Result, bail};
use clap::Args as ClapArgs;
use faasched_lab::node::live::Host;
use faasched_model::{MS, Nanos};

/// The live node's threads and sandboxes.
#[derive(ClapArgs, Debug)]
pub struct HostArgs {
    /// CPUs to pin the threads to, dispatchers first, then workers
    /// (`2-7` or `2,3,4`); by default they are not pinned.
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Idle workers and dispatchers spin instead of sleeping: lower
    /// latency, a busy core each.
    #[arg(long)]
    poll: bool,
    /// CPU time one request may use before it is stopped, ms.
    #[arg(long, default_value_t = 1000.0)]
    cpu_limit_ms: f64,
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
    /// The host as the lab takes it; errors name the flag.
    pub fn host(&self) -> Result<Host> {
        Ok(Host {
            cpus: match &self.cpus {
                Some(list) => cpu_list(list)?,
                None => Vec::new(),
            },
            poll: self.poll,
            cpu_limit: ms(self.cpu_limit_ms, "--cpu-limit-ms")?,
            memory_limit: self.memory_limit_mib << 20,
            max_sandboxes: self.max_sandboxes,
            spin_steps_per_ms: self.spin_steps_per_ms,
        })
    }
}

/// A positive, finite number of ms as ns.
pub fn ms(value: f64, flag: &str) -> Result<Nanos> {
    if !(value.is_finite() && value > 0.0) {
        bail!("{flag}: {value} is not a positive number of ms");
    }
    Ok((value * MS as f64).round() as Nanos)
}

/// `2-4,7` as [2, 3, 4, 7].
fn cpu_list(text: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let bad = || anyhow::anyhow!("--cpus: `{part}` is not a CPU or a range like 2-5");
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi): (usize, usize) = (
                    lo.parse().map_err(|_| bad())?,
                    hi.parse().map_err(|_| bad())?,
                );
                if lo > hi {
                    return Err(bad());
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_ranges_and_refuse_nonsense() {
        assert_eq!(cpu_list("2-4,7").unwrap(), [2, 3, 4, 7]);
        assert_eq!(cpu_list("0").unwrap(), [0]);
        for bad in ["", "a", "4-2", "1-", "1,,2"] {
            assert!(cpu_list(bad).is_err(), "{bad}");
        }
    }
}
