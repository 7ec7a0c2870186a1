//! One node run: a request workload through the simulated node under a
//! policy, summarised.

use super::admission::{Admission, Admit};
use super::catalog::{Knowledge, NodePolicy, darc_types_of_profile};
use crate::interrupt;
use anyhow::{Context, Result, anyhow, bail};
use faasched_model::node::{Request, RequestOutcome};
use faasched_model::{Functions, SEC};
/// `sledgescale`'s preemption tests, as options hold them.
pub use faasched_policy::node::PreemptTest;
use faasched_report::node::{Collector, PolicySummary, Usage};
use faasched_sim::node::{Assign, Costs, Estimate as Estimator, NodeConfig, NodeError, NodeSink};
/// Relative deadlines, as options hold them.
pub use faasched_workload::node::Deadlines;
use faasched_workload::node::{Estimate, Length, Params, RequestFile, Workload};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;
use std::str::FromStr;

/// A node run's settings as a user gives them (flags, an experiment's
/// case): what [`NodeOptions::setup`] checks and turns into a [`NodeSetup`].
/// Every choice is parsed where it enters; a plan file spells each as its
/// flag does (`"estimate": "noisy=0.2"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOptions {
    /// A built-in's name, or a workload CSV's path.
    pub workload: String,
    /// Workers in each dispatcher's group.
    pub workers: u32,
    /// Dispatchers.
    pub dispatchers: u32,
    /// Which dispatcher an arrival reaches.
    #[serde(rename = "random_assign", with = "spread_as_flag")]
    pub spread: Spread,
    /// A built-in's requests; else `seconds` of arrivals.
    pub requests: Option<u64>,
    /// A built-in's seconds of arrivals, when `requests` is not given.
    pub seconds: f64,
    /// Seed of the arrivals, work and noisy estimates.
    pub seed: u64,
    /// Relative deadlines (`sift=1.13ms,*=10x`); `None`: 10 times the work.
    #[serde(with = "crate::text::option")]
    pub deadline: Option<Deadlines>,
    /// What policies are told of a request's work.
    #[serde(with = "crate::text")]
    pub estimate: Estimates,
    /// `sledgescale`'s preemption test.
    #[serde(with = "crate::text")]
    pub preempt_test: PreemptTest,
    /// What the node's mechanisms cost.
    pub costs: Costs,
    /// Every time of the workload (work, deadlines, the gaps between
    /// arrivals) multiplied by this: the same run slowed down, for a live
    /// node whose threads cannot keep µs; the node's costs stay as they are.
    #[serde(default = "no_stretch")]
    pub stretch: u32,
    /// The bounds each dispatcher admits requests under (none by default).
    #[serde(default)]
    pub admission: Admit,
}

impl Default for NodeOptions {
    /// `node simulate`'s: `exponential` on one dispatcher of six workers,
    /// arrivals spread equally, 10 s of them, seed 1, deadlines 10 times
    /// the work, exact estimates, the paper's preemption test, the default
    /// costs, no stretch and no admission bounds.
    fn default() -> NodeOptions {
        NodeOptions {
            workload: "exponential".to_string(),
            workers: 6,
            dispatchers: 1,
            spread: Spread::Equal,
            requests: None,
            seconds: 10.0,
            seed: 1,
            deadline: None,
            estimate: Estimates::Exact,
            preempt_test: PreemptTest::Paper,
            costs: Costs::default(),
            stretch: no_stretch(),
            admission: Admit::default(),
        }
    }
}

/// Which dispatcher an arrival reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// In turn, as the paper's runs do.
    Equal,
    /// At random, seeded, as RSS spreads packets over queues.
    Random,
}

/// [`Spread`] as plan files have always spelled it: `random_assign`, true
/// for [`Spread::Random`].
mod spread_as_flag {
    use super::Spread;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(spread: &Spread, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(*spread == Spread::Random)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Spread, D::Error> {
        Ok(match bool::deserialize(d)? {
            true => Spread::Random,
            false => Spread::Equal,
        })
    }
}

/// What policies are told of a request's work (`--estimate`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Estimates {
    /// Its work: the paper's oracle for synthetic workloads.
    Exact,
    /// The median of the function's last 256 finished requests: the
    /// paper's estimator for real functions.
    Median,
    /// Its work times a factor drawn uniformly from [1 − E, 1 + E), E from
    /// 0 to 1.
    Noisy(f64),
}

impl FromStr for Estimates {
    type Err = anyhow::Error;

    /// `exact`, `median` or `noisy=E`.
    fn from_str(s: &str) -> Result<Estimates> {
        Ok(match s {
            "exact" => Estimates::Exact,
            "median" => Estimates::Median,
            _ => match s.strip_prefix("noisy=") {
                Some(e) => {
                    // One message, not a chain: clap shows only the top.
                    let e: f64 = e
                        .parse()
                        .map_err(|_| anyhow!("`{s}`: `{e}` is not a number"))?;
                    Estimate::noisy(e).map_err(|why| anyhow!("`{s}`: {why}"))?;
                    Estimates::Noisy(e)
                }
                None => bail!("`{s}`: give exact, median or noisy=E"),
            },
        })
    }
}

impl fmt::Display for Estimates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Estimates::Exact => f.write_str("exact"),
            Estimates::Median => f.write_str("median"),
            Estimates::Noisy(e) => write!(f, "noisy={e}"),
        }
    }
}

fn no_stretch() -> u32 {
    1
}

impl NodeOptions {
    /// The setup of a run at `rate` requests per second (a built-in's; a
    /// file keeps its arrivals); errors name the option.
    pub fn setup(&self, rate: Option<f64>) -> Result<NodeSetup> {
        let (estimate, estimator) = self.estimates()?;
        if !(1..=MAX_STRETCH).contains(&self.stretch) {
            bail!(
                "--stretch {}: give a factor from 1 to {MAX_STRETCH}",
                self.stretch
            );
        }
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
            assign: match self.spread {
                Spread::Equal => Assign::Equal,
                Spread::Random => Assign::Random { seed: self.seed },
            },
            estimate: estimator,
            costs: self.costs,
        };
        config.validate()?;
        Ok(NodeSetup {
            workload,
            config,
            seed: self.seed,
            stretch: self.stretch,
            deadlines: self.deadline.clone().unwrap_or_default(),
            estimate,
            preempt_test: self.preempt_test,
            admission: self.admission.rules()?,
        })
    }

    /// A built-in's capacity with every worker of every group, stretched;
    /// `None` for a file.
    pub fn capacity(&self) -> Option<f64> {
        let w = Workload::builtin(&self.workload).ok()?;
        Some(w.capacity(self.workers * self.dispatchers) / f64::from(self.stretch.max(1)))
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

    /// The estimates the workload gives, and the estimator the node runs.
    fn estimates(&self) -> Result<(Estimate, Estimator)> {
        Ok(match self.estimate {
            Estimates::Exact => (Estimate::Exact, Estimator::Given),
            Estimates::Median => (Estimate::Exact, Estimator::PAPER_MEDIAN),
            Estimates::Noisy(e) => (
                Estimate::noisy(e).with_context(|| format!("--estimate {}", self.estimate))?,
                Estimator::Given,
            ),
        })
    }
}

/// The largest `--stretch`.
pub const MAX_STRETCH: u32 = 1_000;

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
    /// Every time of the workload multiplied by this ([`NodeOptions::stretch`]).
    pub stretch: u32,
    /// Relative deadlines.
    pub deadlines: Deadlines,
    /// The estimates the workload gives.
    pub estimate: Estimate,
    /// `sledgescale`'s preemption test.
    pub preempt_test: PreemptTest,
    /// The bounds each dispatcher admits requests under.
    pub admission: Admission,
}

impl NodeSetup {
    /// What each dispatcher's policy is built from.
    pub fn knowledge(&self) -> Knowledge {
        let workers = self.config.workers as u32;
        let k = match &self.workload {
            NodeWorkload::Builtin { workload, .. } => {
                Knowledge::of_builtin(workload, workers, self.preempt_test)
            }
            NodeWorkload::File(f) => Knowledge {
                workers,
                preempt_test: self.preempt_test,
                darc_types: darc_types_of_profile(f.profile()),
                darc_paper: None,
                stretch: 1,
                admission: Admission::default(),
            },
        };
        k.admitting(self.admission).stretched(self.stretch)
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
            stretch: self.stretch,
            deadlines: self.deadlines.clone(),
            estimate: self.estimate,
            preempt_test: self.preempt_test,
            admission: self.admission,
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
                "capacity_rps": workload.capacity((self.config.workers * self.config.dispatchers) as u32) / f64::from(self.stretch),
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
        let mut settings = json!({
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
            "preempt_test": self.preempt_test.to_string(),
            "dispatchers": c.dispatchers,
            "workers_per_dispatcher": c.workers,
            "assign": c.assign,
            "costs": c.costs,
        });
        if self.stretch != 1 {
            // Only where it is set: an unstretched run's summary.json is
            // the same as before the option existed.
            settings["stretch"] = json!(self.stretch);
        }
        let a = self.admission;
        if a.bounds_anything() {
            settings["admission"] = json!({
                "max_queued": a.max_queued,
                "max_backlog_ms": a.max_backlog.map(|ns| ns as f64 / 1e6),
                "fair_share": a.fair_share,
                "refuse_late": a.refuse_late,
            });
        }
        settings
    }

    /// The requests, from their start, stretched.
    pub fn requests(
        &self,
    ) -> Result<Box<dyn Iterator<Item = faasched_workload::Result<Request>> + '_>> {
        let k = u64::from(self.stretch);
        let unstretched: Box<dyn Iterator<Item = faasched_workload::Result<Request>>> =
            match &self.workload {
                NodeWorkload::Builtin {
                    workload,
                    rate,
                    length,
                } => {
                    // The stream of `rate × k` over `length / k`, every
                    // time then multiplied by k: `rate` over `length`.
                    let params = Params {
                        rate_per_s: *rate * k as f64,
                        length: match *length {
                            Length::Duration(ns) => Length::Duration(ns / k),
                            count => count,
                        },
                        seed: self.seed,
                        deadlines: self.deadlines.clone(),
                        estimate: self.estimate,
                    };
                    Box::new(workload.requests(&params)?.map(Ok))
                }
                NodeWorkload::File(f) => {
                    Box::new(f.requests(&self.deadlines, self.estimate, self.seed)?)
                }
            };
        if k == 1 {
            return Ok(unstretched);
        }
        Ok(Box::new(unstretched.map(move |r| {
            r.map(|r| Request {
                arrival: r.arrival.saturating_mul(k),
                work: r.work.saturating_mul(k),
                deadline: r.deadline.saturating_mul(k),
                estimate: r.estimate.saturating_mul(k),
                ..r
            })
        })))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::catalog::node_policies;

    fn options(rate_stretch: u32, seconds: f64) -> NodeOptions {
        NodeOptions {
            workload: "bimodal-high".into(),
            workers: 2,
            dispatchers: 1,
            spread: Spread::Equal,
            requests: None,
            seconds,
            seed: 7,
            deadline: None,
            estimate: Estimates::Exact,
            preempt_test: PreemptTest::Paper,
            costs: Costs::zero(),
            stretch: rate_stretch,
            admission: Admit::default(),
        }
    }

    /// A plan file spells each choice as its flag does, and reads back as
    /// it was written; a bad choice is an error naming it.
    #[test]
    fn options_read_back_as_their_flags_spell_them() {
        let o = NodeOptions {
            spread: Spread::Random,
            deadline: Some("long=100ms,*=10x".parse().unwrap()),
            estimate: "noisy=0.25".parse().unwrap(),
            preempt_test: PreemptTest::Code,
            ..options(1, 1.0)
        };
        let json = serde_json::to_value(&o).unwrap();
        assert_eq!(json["random_assign"], true);
        assert_eq!(json["deadline"], "long=100ms,*=10x");
        assert_eq!(json["estimate"], "noisy=0.25");
        assert_eq!(json["preempt_test"], "code");
        assert_eq!(serde_json::from_value::<NodeOptions>(json).unwrap(), o);
        let plain = serde_json::to_value(options(1, 1.0)).unwrap();
        assert_eq!(plain["deadline"], serde_json::Value::Null);
        assert_eq!(plain["estimate"], "exact");
        let mut bad = plain.clone();
        bad["estimate"] = "noisy=2".into();
        let err = serde_json::from_value::<NodeOptions>(bad).unwrap_err();
        assert!(
            err.to_string().contains("noisy=2") && err.to_string().contains("[0, 1]"),
            "{err}"
        );
        for (text, estimates) in [
            ("exact", Estimates::Exact),
            ("median", Estimates::Median),
            ("noisy=0.5", Estimates::Noisy(0.5)),
        ] {
            assert_eq!(text.parse::<Estimates>().unwrap(), estimates);
            assert_eq!(estimates.to_string(), text);
        }
        for bad in ["", "noisy", "noisy=x", "noisy=-1", "guess"] {
            assert!(bad.parse::<Estimates>().is_err(), "{bad}");
        }
    }

    /// With mechanisms that cost nothing, a run stretched K times is the
    /// same schedule K times slower, under policies with quanta of their
    /// own too, and with admission control (its backlog stretched): every
    /// request's arrival, first run and finish are K times the unstretched
    /// run's at K times the rate, its preemptions and refusals the same.
    #[test]
    fn a_stretched_run_is_the_same_schedule_slowed_down() {
        let k = 10;
        let policies = node_policies(&[
            "sledgescale".into(),
            "rr".into(),
            "shinjuku".into(),
            "darc".into(),
        ])
        .unwrap();
        let bounded = Admit {
            max_backlog_ms: Some(0.5),
            fair_share: true,
            refuse_late: true,
            ..Admit::default()
        };
        for (policy, admission) in policies
            .iter()
            .flat_map(|p| [(p, Admit::default()), (p, bounded)])
        {
            let run = |stretch: u32, rate: f64, seconds: f64| {
                let setup = NodeOptions {
                    admission,
                    ..options(stretch, seconds)
                }
                .setup(Some(rate))
                .unwrap();
                let mut out = Vec::new();
                let (summary, offered) = setup.run(policy, |o| out.push(*o)).unwrap();
                out.sort_by_key(|o| o.info.id);
                (out, summary, offered)
            };
            let (plain, _, plain_rate) = run(1, 1_600.0, 0.5);
            let (slow, summary, slow_rate) = run(k, 160.0, 5.0);
            assert_eq!(plain_rate, slow_rate * f64::from(k));
            assert!(plain.len() > 500, "{}", plain.len());
            assert_eq!(plain.len(), slow.len(), "{}", policy.name());
            let times = |o: &RequestOutcome| {
                (
                    o.info.arrival,
                    o.info.deadline,
                    o.work,
                    o.first_run,
                    o.finish,
                )
            };
            let k = u64::from(k);
            for (p, s) in plain.iter().zip(&slow) {
                let (a, d, w, f, e) = times(p);
                assert_eq!(
                    times(s),
                    (a * k, d * k, w * k, f.map(|t| t * k), e.map(|t| t * k)),
                    "{}: request {}",
                    policy.name(),
                    p.info.id.0
                );
                assert_eq!(p.preemptions, s.preemptions);
            }
            // A bounded node keeps its queues short: nothing may be
            // worth preempting.
            assert!(
                summary.scopes[0].preemptions > 0
                    || policy.name() == "darc"
                    || admission == bounded
            );
            if admission == bounded {
                assert!(summary.scopes[0].dropped > 0, "{}", policy.name());
            }
        }
    }

    /// Past the node's capacity, an unbounded node queues without end and
    /// misses nearly everything; bounding its backlog refuses the excess
    /// and the requests it admits finish in time. The run's settings say
    /// what it admitted under, and only when it bounds anything.
    #[test]
    fn admission_refuses_the_excess_past_capacity() {
        let policy = &node_policies(&["sledgescale".into()]).unwrap()[0];
        let run = |admission: Admit| {
            let rate = 2.0 * options(1, 0.5).capacity().unwrap();
            let setup = NodeOptions {
                admission,
                ..options(1, 0.5)
            }
            .setup(Some(rate))
            .unwrap();
            let (summary, _) = setup.run(policy, |_| {}).unwrap();
            (summary.scopes[0].clone(), setup.describe())
        };
        let (open, open_settings) = run(Admit::default());
        let (bounded, settings) = run(Admit {
            max_backlog_ms: Some(5.0),
            refuse_late: true,
            ..Admit::default()
        });
        assert_eq!(open.dropped, 0);
        assert!(open.missed * 10 > open.requests * 8, "{open:?}");
        // Much of the excess is refused (long requests first: they pass
        // the backlog bound sooner, so more short ones fit); of what is
        // admitted, nearly everything meets its deadline.
        assert!(bounded.dropped * 5 > bounded.requests, "{bounded:?}");
        let late = bounded.missed - bounded.dropped;
        assert!(
            late * 20 < bounded.requests - bounded.dropped,
            "{bounded:?}"
        );
        assert!(open_settings.get("admission").is_none());
        assert_eq!(settings["admission"]["max_backlog_ms"], 5.0);
        assert_eq!(settings["admission"]["refuse_late"], true);
    }

    #[test]
    fn a_stretch_out_of_range_is_refused() {
        for bad in [0, MAX_STRETCH + 1] {
            let e = options(bad, 1.0).setup(Some(100.0)).unwrap_err();
            assert!(e.to_string().contains("--stretch"), "{e}");
        }
    }
}
