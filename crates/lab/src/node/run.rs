//! One node run: a request workload through the simulated node under a
//! policy, summarised.

use super::catalog::{Knowledge, NodePolicy, darc_types_of_profile};
use crate::interrupt;
use anyhow::{Context, Result, anyhow, bail};
use faasched_model::node::{Request, RequestOutcome};
use faasched_model::{Functions, SEC};
use faasched_policy::node::PreemptTest;
use faasched_report::node::{Collector, PolicySummary, Usage};
use faasched_sim::node::{Assign, Costs, Estimate as Estimator, NodeConfig, NodeError, NodeSink};
use faasched_workload::node::{Deadlines, Estimate, Length, Params, RequestFile, Workload};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A node run's settings as a user gives them (flags, an experiment's
/// case): what [`NodeOptions::setup`] checks and turns into a [`NodeSetup`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOptions {
    /// A built-in's name, or a workload CSV's path.
    pub workload: String,
    /// Workers in each dispatcher's group.
    pub workers: u32,
    /// Dispatchers.
    pub dispatchers: u32,
    /// Arrivals to dispatchers at random (seeded), else in turn.
    pub random_assign: bool,
    /// A built-in's requests; else `seconds` of arrivals.
    pub requests: Option<u64>,
    /// A built-in's seconds of arrivals, when `requests` is not given.
    pub seconds: f64,
    /// Seed of the arrivals, work and noisy estimates.
    pub seed: u64,
    /// Relative deadlines (`sift=1.13ms,*=10x`); `None`: 10 times the work.
    pub deadline: Option<String>,
    /// `exact`, `median` or `noisy=E`.
    pub estimate: String,
    /// `sledgescale`'s preemption test: `paper` or `code`.
    pub preempt_test: String,
    /// What the node's mechanisms cost.
    pub costs: Costs,
}

impl NodeOptions {
    /// The setup of a run at `rate` requests per second (a built-in's; a
    /// file keeps its arrivals); errors name the option.
    pub fn setup(&self, rate: Option<f64>) -> Result<NodeSetup> {
        let (estimate, estimator) = self.estimates()?;
        let workload = match Workload::builtin(&self.workload) {
            Ok(workload) => NodeWorkload::Builtin {
                workload,
                rate: rate.unwrap_or(0.0),
                length: self.length()?,
            },
            Err(_) if std::path::Path::new(&self.workload).exists() => {
                NodeWorkload::File(RequestFile::open(self.workload.as_ref())?)
            }
            Err(e) => {
                return Err(anyhow!("{e}, and no file `{}` exists", self.workload));
            }
        };
        let config = NodeConfig {
            dispatchers: self.dispatchers as usize,
            workers: self.workers as usize,
            assign: match self.random_assign {
                false => Assign::Equal,
                true => Assign::Random { seed: self.seed },
            },
            estimate: estimator,
            costs: self.costs,
        };
        config.validate()?;
        let deadlines = match &self.deadline {
            Some(spec) => Deadlines::parse(spec).context("--deadline")?,
            None => Deadlines::default(),
        };
        Ok(NodeSetup {
            workload,
            config,
            seed: self.seed,
            deadlines,
            estimate,
            preempt_test: match self.preempt_test.as_str() {
                "paper" => PreemptTest::Paper,
                "code" => PreemptTest::Code,
                t => bail!("--preempt-test {t}: give paper or code"),
            },
        })
    }

    /// A built-in's capacity with every worker of every group; `None` for
    /// a file.
    pub fn capacity(&self) -> Option<f64> {
        let w = Workload::builtin(&self.workload).ok()?;
        Some(w.capacity(self.workers * self.dispatchers))
    }

    fn length(&self) -> Result<Length> {
        if let Some(n) = self.requests {
            return Ok(Length::Count(n));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0) {
            bail!(
                "--seconds {}: give a duration above 0 and at most a day",
                self.seconds
            );
        }
        Ok(Length::Duration((self.seconds * SEC as f64).round() as u64))
    }

    fn estimates(&self) -> Result<(Estimate, Estimator)> {
        let s = self.estimate.as_str();
        Ok(match s {
            "exact" => (Estimate::Exact, Estimator::Given),
            "median" => (Estimate::Exact, Estimator::PAPER_MEDIAN),
            _ => match s.strip_prefix("noisy=") {
                Some(e) => {
                    let e: f64 = e
                        .parse()
                        .with_context(|| format!("--estimate {s}: `{e}` is not a number"))?;
                    (
                        Estimate::noisy(e).with_context(|| format!("--estimate {s}"))?,
                        Estimator::Given,
                    )
                }
                None => bail!("--estimate {s}: give exact, median or noisy=E"),
            },
        })
    }
}

/// Where the requests come from.
#[derive(Debug)]
pub enum NodeWorkload {
    /// A built-in, generated at a rate.
    Builtin {
        /// The workload.
        workload: Workload,
        /// Mean arrival rate, requests per second.
        rate: f64,
        /// Where the stream ends.
        length: Length,
    },
    /// A workload CSV, its arrivals as they are.
    File(RequestFile),
}

/// Everything that fixes a node run but the policy.
#[derive(Debug)]
pub struct NodeSetup {
    /// The requests.
    pub workload: NodeWorkload,
    /// The node's shape and costs.
    pub config: NodeConfig,
    /// Seed of the arrivals, work and noisy estimates.
    pub seed: u64,
    /// Relative deadlines.
    pub deadlines: Deadlines,
    /// The estimates the workload gives.
    pub estimate: Estimate,
    /// `sledgescale`'s preemption test.
    pub preempt_test: PreemptTest,
}

impl NodeSetup {
    /// What each dispatcher's policy is built from.
    pub fn knowledge(&self) -> Knowledge {
        let workers = self.config.workers as u32;
        match &self.workload {
            NodeWorkload::Builtin { workload, .. } => {
                Knowledge::of_builtin(workload, workers, self.preempt_test)
            }
            NodeWorkload::File(f) => Knowledge {
                workers,
                preempt_test: self.preempt_test,
                darc_types: darc_types_of_profile(f.profile()),
                darc_paper: None,
            },
        }
    }

    /// The functions, by id.
    pub fn functions(&self) -> Functions {
        match &self.workload {
            NodeWorkload::Builtin { workload, .. } => workload.function_table(),
            NodeWorkload::File(f) => f.functions().clone(),
        }
    }

    /// The offered rate: a built-in's, or `None` for a file (measured by
    /// the run from its arrivals).
    pub fn rate(&self) -> Option<f64> {
        match &self.workload {
            NodeWorkload::Builtin { rate, .. } => Some(*rate),
            NodeWorkload::File(_) => None,
        }
    }

    /// The same built-in at `rate` requests per second with `seed`, for
    /// `length`: one probe of a search over rates; `None` for a file,
    /// whose arrivals fix its rate.
    pub fn probe(&self, rate: f64, seed: u64, length: Length) -> Option<NodeSetup> {
        let NodeWorkload::Builtin { workload, .. } = &self.workload else {
            return None;
        };
        Some(NodeSetup {
            workload: NodeWorkload::Builtin {
                workload: *workload,
                rate,
                length,
            },
            config: self.config.clone(),
            seed,
            deadlines: self.deadlines.clone(),
            estimate: self.estimate,
            preempt_test: self.preempt_test,
        })
    }

    /// The run's settings, as summary.json records them.
    pub fn describe(&self) -> Value {
        let workload = match &self.workload {
            NodeWorkload::Builtin {
                workload,
                rate,
                length,
            } => json!({
                "name": workload.name,
                "rate_rps": rate,
                "capacity_rps": workload.capacity((self.config.workers * self.config.dispatchers) as u32),
                "length": match length {
                    Length::Duration(ns) => json!({"seconds": *ns as f64 / SEC as f64}),
                    Length::Count(n) => json!({"requests": n}),
                },
            }),
            NodeWorkload::File(f) => json!({
                "file": f.path().display().to_string(),
                "requests": f.len(),
            }),
        };
        let c = &self.config;
        json!({
            "workload": workload,
            "seed": self.seed,
            "deadlines": match self.deadlines.to_string() {
                spec if spec.is_empty() => "10x".to_string(),
                spec => spec,
            },
            "estimate": match self.estimate {
                Estimate::Exact => "exact".to_string(),
                e => format!("noisy={}", e.error()),
            },
            "estimator": c.estimate,
            "preempt_test": match self.preempt_test {
                PreemptTest::Paper => "paper",
                PreemptTest::Code => "code",
            },
            "dispatchers": c.dispatchers,
            "workers_per_dispatcher": c.workers,
            "assign": c.assign,
            "costs": c.costs,
        })
    }

    /// The requests, from their start.
    fn requests(
        &self,
    ) -> Result<Box<dyn Iterator<Item = faasched_workload::Result<Request>> + '_>> {
        Ok(match &self.workload {
            NodeWorkload::Builtin {
                workload,
                rate,
                length,
            } => {
                let params = Params {
                    rate_per_s: *rate,
                    length: *length,
                    seed: self.seed,
                    deadlines: self.deadlines.clone(),
                    estimate: self.estimate,
                };
                Box::new(workload.requests(&params)?.map(Ok))
            }
            NodeWorkload::File(f) => {
                Box::new(f.requests(&self.deadlines, self.estimate, self.seed)?)
            }
        })
    }

    /// Runs `policy` over the requests and summarises it, calling `each`
    /// on every outcome; returns the summary and the offered rate (a
    /// file's: its requests over the time between its first and last
    /// arrival).
    pub fn run(
        &self,
        policy: &NodePolicy,
        mut each: impl FnMut(&RequestOutcome),
    ) -> Result<(PolicySummary, f64)> {
        let k = self.knowledge();
        let mut policies = (0..self.config.dispatchers)
            .map(|_| policy.build(&k))
            .collect::<Result<Vec<_>>>()?;
        let mut sink = Recording {
            collector: Collector::new(policy.name()),
            each: &mut each,
            arrivals: None,
        };
        let stats =
            faasched_sim::node::run(&self.config, &mut policies, self.requests()?, &mut sink)
                .map_err(|e| match e {
                    NodeError::Interrupted { .. } => {
                        interrupt::check().err().unwrap_or_else(|| anyhow!("{e}"))
                    }
                    e => anyhow!("{}: {e}", policy.name()),
                })?;
        let share = |busy: &[u64]| -> Vec<f64> {
            busy.iter()
                .map(|&b| match stats.span {
                    0 => 0.0,
                    s => b as f64 / s as f64,
                })
                .collect()
        };
        let usage = Usage {
            span: stats.span,
            workers: share(&stats.worker_busy),
            dispatchers: share(&stats.dispatcher_busy),
        };
        let rate = self.rate().unwrap_or_else(|| match sink.arrivals {
            Some((first, last, n)) if last > first => n as f64 * SEC as f64 / (last - first) as f64,
            _ => 0.0,
        });
        Ok((sink.collector.finish(&self.functions(), usage), rate))
    }
}

/// The sink of [`NodeSetup::run`]: records each outcome, hands it on, and
/// notes the arrivals' span; stops the run when the process is asked to.
struct Recording<'a, F> {
    collector: Collector,
    each: &'a mut F,
    /// First and last arrival, and the requests seen.
    arrivals: Option<(u64, u64, u64)>,
}

impl<F: FnMut(&RequestOutcome)> NodeSink for &mut Recording<'_, F> {
    fn outcome(&mut self, o: RequestOutcome) {
        self.collector.record(&o);
        (self.each)(&o);
        let at = o.info.arrival;
        self.arrivals = Some(match self.arrivals {
            None => (at, at, 1),
            Some((first, last, n)) => (first.min(at), last.max(at), n + 1),
        });
    }

    fn interrupted(&mut self) -> bool {
        interrupt::requested()
    }
}
