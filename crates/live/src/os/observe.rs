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
/// 10 ms, fine over a policy's period of a second or more), read once.
pub fn core_busy(cores: usize) -> io::Result<Vec<Nanos>> {
    CoreBusy::open()?.read(cores)
}

/// `/proc/stat`, kept open for readings of each CPU's busy time: one
/// `pread` into a buffer kept between readings. Why: a steering reads it
/// every policy period (10 ms under a wait guard), and reading it afresh
/// (open, stat, eight reads into a growing string, close) was a steady
/// eleven system calls a period, the most of an idle agent's.
#[derive(Debug)]
pub struct CoreBusy {
    file: File,
    buf: Vec<u8>,
}

/// The first buffer: the whole of `/proc/stat` on small machines, and its
/// per-CPU lines (about 100 bytes each) up to a few dozen CPUs.
const FIRST_BUF: usize = 4096;

/// The most of `/proc/stat` read for its per-CPU lines (the first lines of
/// the file): enough for thousands of CPUs.
const MAX_BUF: usize = 4 << 20;

impl CoreBusy {
    /// Opens `/proc/stat`.
    pub fn open() -> io::Result<CoreBusy> {
        CoreBusy::at(Path::new("/proc/stat"))
    }

    fn at(path: &Path) -> io::Result<CoreBusy> {
        Ok(CoreBusy {
            file: File::open(path)?,
            buf: vec![0; FIRST_BUF],
        })
    }

    /// Each of CPUs `0..cores`' busy time now (0 for a CPU the file does not
    /// list): all but idle and iowait (guest time is already inside user).
    pub fn read(&mut self, cores: usize) -> io::Result<Vec<Nanos>> {
        loop {
            let n = self.file.read_at(&mut self.buf, 0)?;
            let text = &self.buf[..n];
            // Whole, or past the per-CPU lines: a later line has begun
            // (far enough to tell it from a CPU's line cut short).
            let past_cpus = || {
                text.split(|&b| b == b'\n')
                    .skip(1)
                    .any(|line| line.len() >= 3 && !line.starts_with(b"cpu"))
            };
            if n < self.buf.len() || past_cpus() {
                return Ok(parse_core_busy(text, cores));
            }
            if self.buf.len() >= MAX_BUF {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("no line but per-CPU lines in its first {MAX_BUF} bytes"),
                ));
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
    }
}

fn parse_core_busy(bytes: &[u8], cores: usize) -> Vec<Nanos> {
    let tick = clock::user_tick();
    let mut busy = vec![0; cores];
    for line in bytes.split(|&b| b == b'\n') {
        let Some(line) = std::str::from_utf8(line).ok() else {
            continue;
        };
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
        // user nice system idle iowait irq softirq steal
        let mut v = [0u64; 8];
        let mut got = 0;
        for (slot, word) in v.iter_mut().zip(f) {
            let Ok(x) = word.parse() else { break };
            *slot = x;
            got += 1;
        }
        if got == 8 {
            busy[cpu] = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * tick;
        }
    }
    busy
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
        let mut stat = CoreBusy::at(&path).unwrap();
        assert_eq!(stat.read(2).unwrap(), vec![19 * tick, 5 * tick]);
        assert_eq!(stat.read(1).unwrap(), vec![19 * tick]);
        // A CPU the file does not list, or lists short, reads 0.
        assert_eq!(stat.read(3).unwrap(), vec![19 * tick, 5 * tick, 0]);
        // Read again from the start each time: a changed file reads anew.
        std::fs::write(&path, "cpu0 20 1 5 100 3 2 1 0 0 0\ncpu1 1 0 0\n").unwrap();
        assert_eq!(stat.read(2).unwrap(), vec![29 * tick, 0]);
    }

    #[test]
    fn per_cpu_lines_longer_than_the_buffer_are_read_whole() {
        // 200 CPUs' lines (past the first buffer) and a long line after them.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stat");
        let mut text = String::from("cpu  1 1 1 1 1 1 1 1 0 0\n");
        for c in 0..200 {
            text.push_str(&format!("cpu{c} {c} 0 0 1000000 0 0 0 1 0 0\n"));
        }
        text.push_str(&format!("intr {}\n", "0 ".repeat(20_000)));
        assert!(text.len() > 2 * FIRST_BUF);
        std::fs::write(&path, &text).unwrap();
        let tick = clock::user_tick();
        let mut stat = CoreBusy::at(&path).unwrap();
        let busy = stat.read(200).unwrap();
        assert_eq!(busy[0], tick);
        assert_eq!(busy[199], 200 * tick);
        // It grew only as far as the per-CPU lines needed, not to the file.
        assert!(stat.buf.len() < text.len(), "{} bytes", stat.buf.len());
    }

    #[test]
    fn a_cpu_line_cut_short_at_the_buffers_end_is_read_again_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stat");
        let line = |c: usize| format!("cpu{c} 7 0 0 1000 0 0 0 0 0 0\n");
        // The aggregate line padded so that the buffer ends two bytes into
        // a CPU's line ("cp"), then the rest of the file.
        let lines: String = (0..40).map(line).collect();
        let cut = lines.find(&line(30)).unwrap() + 2;
        let head = format!(
            "cpu  1 1 1 1 1 1 1 1 0 0{}\n",
            " ".repeat(FIRST_BUF - cut - 25)
        );
        let text = format!("{head}{lines}intr 1 2 3\n");
        assert_eq!(&text[FIRST_BUF - 2..FIRST_BUF], "cp");
        std::fs::write(&path, &text).unwrap();
        let busy = CoreBusy::at(&path).unwrap().read(40).unwrap();
        assert_eq!(busy, vec![7 * clock::user_tick(); 40]);
    }

    #[test]
    fn reads_this_machines_proc_stat_with_one_descriptor() {
        let cpus = crate::sys::sched::online_cpus();
        let mut stat = CoreBusy::open().unwrap();
        let a: Nanos = stat.read(cpus).unwrap().iter().sum();
        let until = clock::monotonic() + 50_000_000;
        while clock::monotonic() < until {}
        let b: Nanos = stat.read(cpus).unwrap().iter().sum();
        // Busy time since boot never falls, and is fresh at each reading.
        assert!(b >= a && a > 0, "{a} then {b}");
        assert_eq!(core_busy(cpus).unwrap().len(), cpus);
    }

    #[test]
    fn reads_this_threads_schedstat() {
        // The test runs on a thread of its own, and a pid's schedstat is its
        // main thread's.
        let s = Schedstat::at(Path::new("/proc/thread-self/schedstat")).unwrap();
        let a = s.read().unwrap();
        // The kernel brings a running thread's CPU time up to date at its
        // ticks, not at a read: spin until one passed (1 s at most).
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let mut x = 0u64;
        let mut b = s.read().unwrap();
        while b.cpu == a.cpu && std::time::Instant::now() < until {
            for i in 0..100_000u64 {
                x = std::hint::black_box(x ^ i.wrapping_mul(31));
            }
            b = s.read().unwrap();
        }
        assert!(b.cpu > a.cpu, "{x}");
    }
}
