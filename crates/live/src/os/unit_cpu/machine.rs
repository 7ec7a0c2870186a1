//! The machine a calibration was measured on, so that a result can say where
//! its numbers hold (and a stale calibration from another machine shows).

use serde::{Deserialize, Serialize};
use std::fs;

/// Facts about a machine, read from /proc.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// The CPU's model name, from /proc/cpuinfo.
    pub cpu_model: String,
    /// Cores this process may run on (affinity and cgroup limits included).
    pub cores: usize,
    /// Kernel release, as `uname -r` prints it.
    pub kernel: String,
}

/// What a fact we could not read is recorded as.
const UNKNOWN: &str = "unknown";

impl Machine {
    /// This machine. A fact that cannot be read is "unknown": a calibration
    /// is still worth having without it.
    pub fn this() -> Machine {
        Machine {
            hostname: first_line("/proc/sys/kernel/hostname"),
            cpu_model: cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            // The same string uname(2) returns as the release.
            kernel: first_line("/proc/sys/kernel/osrelease"),
        }
    }
}

fn first_line(path: &str) -> String {
    fs::read_to_string(path)
        .ok()
        .and_then(|text| text.lines().next().map(|l| l.trim().to_owned()))
        .unwrap_or_else(|| UNKNOWN.to_owned())
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(key, _)| key.trim() == "model name")
                .map(|(_, value)| value.trim().to_owned())
        })
        .unwrap_or_else(|| UNKNOWN.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_machine() {
        let m = super::Machine::this();
        assert!(m.cores >= 1);
        assert!(!m.kernel.is_empty() && !m.hostname.is_empty(), "{m:?}");
    }
}
