//! A server whose cores are a machine's kernel: the kernel model's cores
//! under an OS steering policy ([`Steer`]), every context switch charged
//! as [`os::Config`](crate::os::Config) says. The cluster engine keeps the
//! containers; each invocation it starts becomes one process, arriving
//! when it starts, as `os simulate` runs one.

use super::config::{ClusterConfig, ConfigError, ServerShape};
use super::cores::{Bind, Build, Cores, Done, Ids, Job, uncontended};
use super::outcome::InsideStats;
use crate::os::engine::Engine;
use crate::os::{Config, Sink};
use faasched_model::cluster::{Inside, OsPlace, ServerId};
use faasched_model::{Function, Invocation, Nanos, Outcome, Phase, Phases, Steer, Time};
use std::collections::VecDeque;
use std::ops::DerefMut;
use std::sync::Arc;

/// Servers run as machines: each server's cores are the kernel model's
/// ([`Config`], one for every server), under its own instance of an OS
/// policy. An invocation that starts on a server (warm, or cold once its
/// container is made) is spawned there then as a process of one CPU burst,
/// its work (a CPU cold start's extra included); the policy sees it arrive
/// with its function and memory, and no deadline. Its outcome says how
/// its process fared ([`OsPlace`]).
///
/// The policy's periodic calls run on the grid `os simulate` runs them on
/// (every period from the first arrival, while the server has work in
/// flight or more to come), with one difference at an exact tie: a call
/// due at the instant an invocation starts runs before it starts.
pub struct OsServers<O> {
    /// Every server's kernel: its cores are the cluster's cores per server.
    pub config: Config,
    /// Server `s`'s policy.
    pub policies: O,
}

impl<O, P> Build for OsServers<O>
where
    O: FnMut(ServerId) -> P,
    P: DerefMut,
    P::Target: Steer,
{
    type Cores = OsCores<P>;

    fn cores(
        &mut self,
        config: &ClusterConfig,
        start: Time,
    ) -> Result<Vec<OsCores<P>>, ConfigError> {
        let bad = |e| Err(ConfigError::Server(e));
        if self.config.cores != config.cores as usize {
            return bad(ServerShape::KernelCores {
                kernel: self.config.cores,
                cores: config.cores,
            });
        }
        uncontended(config)?;
        (0..config.servers)
            .map(|s| {
                let policy = (self.policies)(ServerId(s as u32));
                let engine = Engine::new(&self.config, &*policy, start)
                    .map_err(|e| ConfigError::Server(ServerShape::Kernel(e)))?;
                Ok(OsCores {
                    engine,
                    policy,
                    done: VecDeque::new(),
                    name: Arc::from("invocation"),
                    ids: Ids::default(),
                    last: start,
                })
            })
            .collect()
    }
}

/// One server's kernel, its policy, and the outcomes it has handed out
/// and the cluster engine not yet taken.
pub struct OsCores<P> {
    engine: Engine,
    policy: P,
    done: VecDeque<Done>,
    /// The name every process carries: the cluster's functions are known
    /// by id.
    name: Arc<str>,
    /// The ids of the processes spawned so far.
    ids: Ids,
    /// The instant last advanced to.
    last: Time,
}

/// Where the kernel's outcomes go: the server's queue of done work.
struct Queue<'a>(&'a mut VecDeque<Done>);

impl Sink for Queue<'_> {
    fn outcome(&mut self, o: Outcome) {
        self.0.push_back(Done {
            slot: Ids::slot(o.id),
            first_run: Some(o.first_run),
            finish: Some(o.finish),
            inside: Some(Inside::Os(OsPlace {
                voluntary_switches: o.voluntary_switches,
                involuntary_switches: o.involuntary_switches,
            })),
        });
    }
}

impl<P> Cores for OsCores<P>
where
    P: DerefMut,
    P::Target: Steer,
{
    fn in_flight(&self) -> u64 {
        (self.engine.in_flight() + self.done.len()) as u64
    }

    /// Wall-time cold starts do not slow a kernel's cores: an OS server
    /// has no contention term.
    fn set_starting(&mut self, _starting: u64) {}

    fn advance(&mut self, now: Time, _bind: &mut impl Bind) -> Result<(), String> {
        self.run_to(now);
        Ok(())
    }

    /// The invocation is spawned now as one CPU burst of its work; work of
    /// none is done at once.
    fn add(&mut self, job: Job, _bind: &mut impl Bind) -> Result<(), String> {
        self.spawn(job)
    }

    /// The kernel's next event or, while it has work, the policy's next
    /// periodic call.
    fn next_at(&mut self) -> Option<Time> {
        if !self.done.is_empty() {
            return Some(self.last);
        }
        self.next_event()
    }

    fn pop_done(&mut self) -> Option<Done> {
        self.done.pop_front()
    }

    fn busy(&self) -> Nanos {
        self.engine.busy(self.last)
    }

    /// A kernel never holds work: every process it was given has finished
    /// by the end. What the kernel still has to do (a tick, a fair-server
    /// replenishment) is done, as `os simulate` does it, so that the
    /// kernel's events count the same.
    fn end(&mut self) -> Result<Option<InsideStats>, String> {
        while let Some(at) = self.next_event() {
            self.run_to(at);
        }
        Ok(Some(InsideStats::Os(self.engine.finish())))
    }
}

impl<P> OsCores<P>
where
    P: DerefMut,
    P::Target: Steer,
{
    /// The kernel's events due by `now` and the policy's periodic calls
    /// due by then, in time order (a kernel event first at a tie).
    fn run_to(&mut self, now: Time) {
        self.last = self.last.max(now);
        let policy = &mut *self.policy;
        let mut sink = Queue(&mut self.done);
        loop {
            let kernel = self.engine.next_kernel().filter(|&at| at <= now);
            let period = self.engine.next_period().filter(|&at| at <= now);
            let at = match (kernel, period) {
                (Some(at), _) if period.is_none_or(|p| at <= p) => {
                    self.engine.run_kernel(at, period.unwrap_or(now))
                }
                (_, Some(at)) => {
                    self.engine.call_period(at, policy);
                    at
                }
                _ => return,
            };
            self.engine.settle(at, policy, &mut sink);
        }
    }

    /// Spawns the invocation now as one CPU burst of its work; work of
    /// none is done at once.
    fn spawn(&mut self, job: Job) -> Result<(), String> {
        let id = self.ids.issue(job.slot, "process")?;
        if job.work == 0 {
            self.done.push_back(Done {
                slot: job.slot,
                first_run: Some(self.last),
                finish: Some(self.last),
                inside: Some(Inside::Os(OsPlace {
                    voluntary_switches: 0,
                    involuntary_switches: 0,
                })),
            });
            return Ok(());
        }
        let inv = Invocation {
            id,
            function: Function {
                id: job.function,
                name: Arc::clone(&self.name),
            },
            arrival: self.last,
            phases: Phases::from_elem(Phase::Cpu(job.work), 1),
            memory_mb: job.memory_mb,
            deadline: None,
        };
        let policy = &mut *self.policy;
        self.engine.spawn(self.last, inv, policy);
        self.engine
            .settle(self.last, policy, &mut Queue(&mut self.done));
        Ok(())
    }
}

impl<P> OsCores<P> {
    /// The kernel's next event or, while it has one, the policy's next
    /// periodic call: `os simulate` calls the policy while anything is
    /// left to run.
    fn next_event(&mut self) -> Option<Time> {
        let kernel = self.engine.next_kernel()?;
        Some(match self.engine.next_period() {
            Some(p) => kernel.min(p),
            None => kernel,
        })
    }
}
