//! `bench learn`: the ALPS learner's time per lesson (SRPT simulation plus
//! training) for windows of finished invocations of the Huawei-like
//! workload on 56 cores.

use super::{median_wall, release_only};
use crate::outln;
use anyhow::Result;
use faasched_model::{Phase, Phases};
use faasched_policy::os::alps::{self, Record};
use faasched_workload::{Choice, Source};
use serde::Serialize;

/// The window sizes timed, in finished invocations.
pub const WINDOWS: [usize; 4] = [100, 500, 1_000, 5_000];

/// One window size's result.
#[derive(Serialize, Debug)]
pub struct Learned {
    /// Finished invocations in the window.
    pub records: usize,
    /// Median wall time of one lesson, s.
    pub median_s: f64,
    /// Functions the lesson ranked.
    pub functions: usize,
    /// Lessons timed.
    pub runs: u32,
}

/// Times `runs` lessons per window size of [`WINDOWS`], handing each
/// result to `each` as it comes.
pub fn measure(runs: u32, mut each: impl FnMut(&Learned) -> Result<()>) -> Result<Vec<Learned>> {
    let params = alps::Params::default();
    let mut results = Vec::new();
    for records in WINDOWS {
        let source = Source::resolve(&Choice {
            workload: "huawei".into(),
            cores: 56,
            load: Some(0.9),
            invocations: Some(records as u64),
            seed: 1,
        })?;
        // A window as ALPS sees it: each finished invocation's function,
        // arrival and CPU time.
        let window = source
            .stream()?
            .map(|i| {
                let i = i?;
                Ok(Record {
                    function: i.function.id,
                    arrival: i.arrival,
                    phases: Phases::from_buf([Phase::Cpu(i.cpu_demand())]),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // Not counted: a window of 100 takes microseconds, where the
        // counter's own calls would show.
        let timed = median_wall(runs, None, || Ok(alps::learn(&window, 56, 0.9, &params)))?;
        let m = Learned {
            records,
            median_s: timed.wall_s,
            functions: timed.last.len(),
            runs,
        };
        each(&m)?;
        results.push(m);
    }
    Ok(results)
}

/// What `faasched bench learn` times, and how it prints.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Runs per window size; the median is reported.
    #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Print `[{"records", "median_s"}]`.
    #[arg(long)]
    pub json: bool,
}

/// Times the lessons ([`measure`]) in a release build and prints them.
pub fn run(o: Options) -> Result<()> {
    release_only("learn")?;
    let results = measure(o.runs, |m| match o.json {
        true => Ok(()),
        false => outln!(
            "window {:>5} records  {:>3} functions  median {:>10.6} s per lesson",
            m.records,
            m.functions,
            m.median_s
        ),
    })?;
    if o.json {
        outln!("{}", serde_json::to_string_pretty(&results)?)?;
    }
    Ok(())
}
