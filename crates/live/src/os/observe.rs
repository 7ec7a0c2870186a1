//! What the kernel's own accounting says, read without polling storms: a
//! task's CPU time and run-queue wait from `/proc/PID/schedstat` (one `pread`
//! on a descriptor kept open, about 0.5 µs), per-core busy time from
//! `/proc/stat` for a policy's periodic load, and from both how much of
//! the machine other work took while this process ran ([`OtherWork`]).

use crate::sys::clock;
use faasched_model::Nanos;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// `/proc/PID/schedstat` of one task, kept open.
#[derive(Debug)]
pub struct Schedstat {
    file: File,
}

/// One reading of a task's schedstat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedstatReading {
    /// Time on a CPU (`sum_exec_runtime`), ns.
    pub cpu: Nanos,
    /// Time runnable on a run queue but not running (`run_delay`), ns.
    pub wait: Nanos,
    /// Turns on a CPU (`pcount`).
    pub turns: u64,
}

impl Schedstat {
    /// Opens the schedstat of process `pid`. It stays readable after the
    /// process exits, until it is reaped.
    pub fn open(pid: libc::pid_t) -> io::Result<Schedstat> {
        Schedstat::at(Path::new(&format!("/proc/{pid}/schedstat")))
    }

    fn at(path: &Path) -> io::Result<Schedstat> {
        Ok(Schedstat {
            file: File::open(path)?,
        })
    }

    /// Reads it now.
    pub fn read(&self) -> io::Result<SchedstatReading> {
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0)?;
        parse_schedstat(&buf[..n])
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed schedstat"))
    }
}

fn parse_schedstat(bytes: &[u8]) -> Option<SchedstatReading> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut f = text.split_ascii_whitespace().map(|w| w.parse::<u64>().ok());
    Some(SchedstatReading {
        cpu: f.next()??,
        wait: f.next()??,
        turns: f.next()??,
    })
}

/// Busy time of each CPU since boot, from `/proc/stat` (USER_HZ resolution:
/// 10 ms, fine over a policy's period of a second or more).
pub fn core_busy(cores: usize) -> io::Result<Vec<Nanos>> {
    core_busy_from(Path::new("/proc/stat"), cores)
}

fn core_busy_from(path: &Path, cores: usize) -> io::Result<Vec<Nanos>> {
    let text = std::fs::read_to_string(path)?;
    let tick = clock::user_tick();
    let mut busy = vec![0; cores];
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let Some(cpu) = f
            .next()
            .and_then(|l| l.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if cpu >= cores {
            continue;
        }
        // user nice system idle iowait irq softirq steal: busy is all but
        // idle and iowait (guest time is already inside user).
        let v: Vec<u64> = f.take(8).filter_map(|w| w.parse().ok()).collect();
        if v.len() == 8 {
            busy[cpu] = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * tick;
        }
    }
    Ok(busy)
}

/// How much of this machine's CPUs other work (other processes, the
/// kernel's threads, the host's steal) takes while this process runs
/// something: the CPUs' busy time from `/proc/stat` less this process's
/// own CPU time, over the CPUs' time. A live run whose machine was busy
/// says so with it. An estimate: `/proc/stat` counts in ticks (10 ms), so
/// a run of seconds reads it to a fraction of a percent.
#[derive(Clone, Copy, Debug)]
pub struct OtherWork {
    cpus: usize,
    busy: Nanos,
    own: Nanos,
    at: Nanos,
}

impl OtherWork {
    /// Starts counting now, over every online CPU.
    pub fn start() -> io::Result<OtherWork> {
        let cpus = crate::sys::sched::online_cpus();
        Ok(OtherWork {
            cpus,
            busy: core_busy(cpus)?.iter().sum(),
            own: clock::process_cpu(),
            at: clock::monotonic(),
        })
    }

    /// The share of the CPUs' time since [`OtherWork::start`] that went to
    /// anything but this process, 0 to 1.
    pub fn share(&self) -> io::Result<f64> {
        let busy: Nanos = core_busy(self.cpus)?.iter().sum();
        let own = clock::process_cpu().saturating_sub(self.own);
        let window = clock::monotonic().saturating_sub(self.at) * self.cpus as Nanos;
        let other = busy.saturating_sub(self.busy).saturating_sub(own);
        Ok((other as f64 / window.max(1) as f64).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_process_is_other_work() {
        let meter = OtherWork::start().unwrap();
        // This process busy for 300 ms: not other work.
        let until = clock::monotonic() + 300_000_000;
        while clock::monotonic() < until {}
        let own = meter.share().unwrap();
        // A child busy for 300 ms: other work.
        let meter = OtherWork::start().unwrap();
        let status = std::process::Command::new("sh")
            .args([
                "-c",
                "end=$(($(date +%s%N) + 300000000)); while [ $(date +%s%N) -lt $end ]; do :; done",
            ])
            .status()
            .unwrap();
        assert!(status.success());
        let child = meter.share().unwrap();
        assert!((0.0..=1.0).contains(&own) && (0.0..=1.0).contains(&child));
        assert!(child > 0.0, "a busy child took no share");
    }

    #[test]
    fn parses_schedstat_and_proc_stat() {
        assert_eq!(
            parse_schedstat(b"1200 340 7\n"),
            Some(SchedstatReading {
                cpu: 1200,
                wait: 340,
                turns: 7
            })
        );
        assert_eq!(parse_schedstat(b"12 x 7\n"), None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stat");
        std::fs::write(
            &path,
            "cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 10 1 5 100 3 2 1 0 0 0\ncpu1 1 0 0 50 0 0 0 4 0 0\nintr 1 2\n",
        )
        .unwrap();
        let tick = clock::user_tick();
        assert_eq!(core_busy_from(&path, 2).unwrap(), vec![19 * tick, 5 * tick]);
        assert_eq!(core_busy_from(&path, 1).unwrap(), vec![19 * tick]);
    }

    #[test]
    fn reads_this_threads_schedstat() {
        // The test runs on a thread of its own, and a pid's schedstat is its
        // main thread's.
        let s = Schedstat::at(Path::new("/proc/thread-self/schedstat")).unwrap();
        let a = s.read().unwrap();
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = std::hint::black_box(x ^ i.wrapping_mul(31));
        }
        let b = s.read().unwrap();
        assert!(b.cpu > a.cpu, "{x}");
    }
}
