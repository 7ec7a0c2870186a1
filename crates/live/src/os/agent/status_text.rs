//! How `faasched agent status` shows the agent's [`Status`]: a summary,
//! then a table per function and per process steered.

use super::protocol::{Sched, Status};
use faasched_model::{Nanos, fmt_ms};
use std::fmt;

/// µs, as the protocol carries times, in ns.
fn us(x: u64) -> Nanos {
    x * 1000
}

/// A process's attributes in a table cell; `-` if unknown.
struct Attributes<'a>(&'a Option<Sched>);

impl fmt::Display for Attributes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => write!(f, "-"),
            Some(s) if s.class == "SCHED_FIFO" || s.class == "SCHED_RR" => {
                write!(f, "{} prio {}", s.class, s.priority)
            }
            Some(s) => write!(
                f,
                "{} nice {} slice {:.2} ms",
                s.class,
                s.nice,
                fmt_ms(us(s.slice_us))
            ),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self;
        writeln!(
            f,
            "agent pid {} on {}, policy {}, up {:.1} s, {:.1} ms of CPU",
            s.pid,
            s.socket,
            s.policy,
            fmt_ms(us(s.uptime_us)) / 1000.0,
            fmt_ms(us(s.cpu_us)),
        )?;
        writeln!(
            f,
            "{} processes handed over, {} invocations finished ({} from an earlier reading), \
             {} requests refused",
            s.registered, s.finished, s.estimated, s.refused
        )?;
        if !s.functions.is_empty() {
            writeln!(
                f,
                "\n{:<24} {:>5} {:>9} {:>10}  latest attributes",
                "function", "live", "finished", "mean CPU"
            )?;
            for func in &s.functions {
                writeln!(
                    f,
                    "{:<24} {:>5} {:>9} {:>7.1} ms  {}",
                    func.name,
                    func.live,
                    func.finished,
                    fmt_ms(us(func.mean_cpu_us)),
                    Attributes(&func.latest)
                )?;
            }
        }
        if !s.processes.is_empty() {
            writeln!(
                f,
                "\n{:>8} {:>6} {:<24} {:>6} {:>9} {:>10}  attributes now",
                "pid", "task", "function", "uid", "age", "CPU"
            )?;
            for p in &s.processes {
                writeln!(
                    f,
                    "{:>8} {:>6} {:<24} {:>6} {:>7.1} s {:>7.1} ms  {}",
                    p.pid,
                    p.task,
                    p.function,
                    p.uid,
                    fmt_ms(us(p.age_us)) / 1000.0,
                    fmt_ms(us(p.cpu_us)),
                    Attributes(&p.sched)
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::protocol::{FunctionStatus, ProcessStatus};
    use super::*;

    #[test]
    fn a_status_reads_as_a_summary_and_two_tables() {
        let fifo = Sched {
            class: "SCHED_FIFO".into(),
            priority: 50,
            ..Sched::default()
        };
        let other = Sched {
            class: "SCHED_OTHER".into(),
            nice: -3,
            slice_us: 2_800,
            ..Sched::default()
        };
        let status = Status {
            pid: 812,
            policy: "alps".into(),
            socket: "/run/a.sock".into(),
            uptime_us: 12_500_000,
            cpu_us: 3_250,
            registered: 2,
            finished: 1,
            estimated: 0,
            refused: 4,
            functions: vec![FunctionStatus {
                name: "resize".into(),
                live: 1,
                finished: 1,
                mean_cpu_us: 1_500,
                latest: Some(other),
            }],
            processes: vec![ProcessStatus {
                pid: 4242,
                task: 9,
                function: "resize".into(),
                uid: 1000,
                age_us: 2_000_000,
                cpu_us: 400,
                sched: Some(fifo),
            }],
        };
        let text = status.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..2],
            [
                "agent pid 812 on /run/a.sock, policy alps, up 12.5 s, 3.2 ms of CPU",
                "2 processes handed over, 1 invocations finished (0 from an earlier reading), \
                 4 requests refused"
            ]
        );
        assert!(
            lines[4].ends_with("1.5 ms  SCHED_OTHER nice -3 slice 2.80 ms"),
            "{text}"
        );
        assert!(lines[7].ends_with("0.4 ms  SCHED_FIFO prio 50"), "{text}");
        assert_eq!(Status::default().to_string().lines().count(), 2);
    }
}
