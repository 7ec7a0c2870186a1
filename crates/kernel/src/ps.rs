//! Ideal processor sharing (sim only): every runnable task progresses at rate
//! min(1, M/n) on M cores with n runnable, with no switching cost.
//!
//! The model keeps one virtual clock, the service every runnable task has
//! received, in fixed point (2^32 units per ns) so rates like M/n stay exact to
//! far below a nanosecond. A task's CPU phase ends when the virtual clock reaches
//! the value it joined at plus its length, so the next completion is the minimum
//! of one heap: no task is visited between events.
//!
//! Policies cannot steer PS (attributes and CPU watches are ignored). A
//! voluntary switch is counted where a CPU phase ends into I/O or the exit,
//! as the core model counts a task leaving its core (not where an I/O phase
//! ends into another, or into the exit); there are no involuntary ones.

use crate::slab::Slab;
use crate::task::started;
use crate::{Config, Notice, TaskStats};
use faasched_model::{Nanos, Phase, Phases, TaskId, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const SCALE: u128 = 1 << 32;

struct PsTask {
    id: TaskId,
    phases: Phases,
    phase: usize,
    started: bool,
    blocked_at: Time,
    stats: TaskStats,
}

/// The processor-sharing model.
pub struct Ps {
    cores: u128,
    tasks: Slab<PsTask>,
    /// Service received by every runnable task so far, ×SCALE.
    service: u128,
    last: Time,
    /// Runnable tasks by the service value at which their phase ends.
    runnable: BinaryHeap<Reverse<(u128, u32)>>,
    io: BinaryHeap<Reverse<(Time, u32)>>,
    busy: Nanos,
    live: usize,
    /// [`Config::report_starts`].
    report_starts: bool,
}

impl Ps {
    pub fn new(cfg: &Config) -> Ps {
        Ps {
            cores: cfg.cores as u128,
            tasks: Slab::default(),
            service: 0,
            last: 0,
            runnable: BinaryHeap::new(),
            io: BinaryHeap::new(),
            busy: 0,
            live: 0,
            report_starts: cfg.report_starts,
        }
    }

    fn sharing(&self) -> (u128, u128) {
        let n = self.runnable.len() as u128;
        (n.min(self.cores), n)
    }

    /// Advances the virtual clock to `now`.
    fn advance(&mut self, now: Time) {
        let (busy, n) = self.sharing();
        if n > 0 && now > self.last {
            let dt = (now - self.last) as u128;
            self.service += dt * SCALE * busy / n;
            self.busy += (dt * busy) as Nanos;
        }
        self.last = now;
    }

    pub fn spawn(&mut self, now: Time, id: TaskId, phases: Phases, out: &mut Vec<Notice>) -> u32 {
        self.advance(now);
        let task = PsTask {
            id,
            phases,
            phase: 0,
            started: false,
            blocked_at: now,
            stats: TaskStats::default(),
        };
        let slot = self.tasks.insert(task);
        self.live += 1;
        self.begin_phase(slot, now, false, out);
        slot
    }

    fn begin_phase(&mut self, slot: u32, now: Time, woke: bool, out: &mut Vec<Notice>) {
        let t = &mut self.tasks[slot as usize];
        let phase = t.phases.get(t.phase).copied();
        // Processor sharing serves a phase at once, CPU or I/O.
        if phase.is_some() && started(&mut t.started, &mut t.stats, now) && self.report_starts {
            out.push(Notice::Started(t.id));
        }
        match phase {
            Some(Phase::Cpu(d)) => {
                if woke {
                    out.push(Notice::Woke(t.id));
                }
                self.runnable
                    .push(Reverse((self.service + d as u128 * SCALE, slot)));
            }
            Some(Phase::Io(d)) => {
                t.blocked_at = now;
                out.push(Notice::Blocked(t.id));
                self.io.push(Reverse((now + d, slot)));
            }
            None => {
                out.push(Notice::Exited(t.id, slot, t.stats));
                t.phases = Phases::new();
                self.tasks.release(slot);
                self.live -= 1;
            }
        }
    }

    fn next_completion(&self) -> Option<Time> {
        let Reverse((end, _)) = self.runnable.peek()?;
        let (busy, n) = self.sharing();
        let dt = (end.saturating_sub(self.service) * n).div_ceil(SCALE * busy);
        Some(self.last + dt as Time)
    }

    pub fn next_event(&mut self) -> Option<Time> {
        let io = self.io.peek().map(|Reverse((t, _))| *t);
        match (self.next_completion(), io) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn step(&mut self, out: &mut Vec<Notice>) -> Option<Time> {
        let now = self.next_event()?;
        self.advance(now);
        if self.next_completion() == Some(now) {
            let Reverse((_, slot)) = self.runnable.pop()?;
            let t = &mut self.tasks[slot as usize];
            if let Some(Phase::Cpu(d)) = t.phases.get(t.phase) {
                t.stats.cpu += d;
            }
            t.phase += 1;
            if !matches!(t.phases.get(t.phase), Some(Phase::Cpu(_))) {
                t.stats.voluntary += 1;
            }
            self.begin_phase(slot, now, false, out);
        } else {
            let Reverse((_, slot)) = self.io.pop()?;
            let t = &mut self.tasks[slot as usize];
            t.stats.io += now - t.blocked_at;
            t.phase += 1;
            self.begin_phase(slot, now, true, out);
        }
        Some(now)
    }

    pub fn set_watch(&mut self, _now: Time, _id: TaskId, _watch: Option<Nanos>) {}

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.cores as usize
    }

    pub fn busy(&self, now: Time) -> Nanos {
        let (busy, _) = self.sharing();
        self.busy + (now.saturating_sub(self.last) as u128 * busy) as Nanos
    }

    pub fn in_flight(&self) -> usize {
        self.live
    }
}
