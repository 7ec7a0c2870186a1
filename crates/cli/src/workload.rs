//! `faasched workload`: write workload CSV from a generator or a production trace.

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args as ClapArgs, Subcommand};
use faasched_lab::workload::count;
use faasched_lab::workload::{
    self, Arrivals, DEFAULT_INVOCATIONS, DEFAULT_LOAD, TraceFiles, parse_range, parse_window,
};
use std::ops::{Range, RangeInclusive};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Generate a synthetic workload (see `simulate --help` for the built-ins).
    Generate(Generate),
    /// Import a production trace.
    #[command(subcommand)]
    Import(Import),
}

impl Command {
    pub fn execute(self) -> Result<()> {
        match self {
            Command::Generate(g) => workload::generate(workload::Generate {
                workload: g.workload,
                cores: usize::from(g.cores),
                load: g.load,
                invocations: g.invocations,
                seed: g.seed,
                output: g.output,
            }),
            Command::Import(i) => workload::import(i.options()),
        }
    }
}

#[derive(ClapArgs, Debug)]
pub struct Generate {
    /// Built-in workload: huawei, azure, lognormal[:scale=F], exponential[:mean-ms=F],
    /// fixed[:cpu-ms=F], bimodal[:p=F,short-us=N,long-us=N], bimodal-high,
    /// bimodal-extreme, mixed-io.
    #[arg(long, short = 'w', default_value = "huawei")]
    workload: String,
    /// Cores the load is computed for, 1 to 256 (as `simulate` takes).
    #[arg(long, short = 'c', default_value_t = 56, value_parser = clap::value_parser!(u16).range(1..=256))]
    cores: u16,
    /// Offered load (CPU demand / core-time).
    #[arg(long, short = 'l', default_value_t = DEFAULT_LOAD, value_parser = faasched_lab::workload::load)]
    load: f64,
    /// Number of invocations.
    #[arg(long, short = 'n', default_value_t = DEFAULT_INVOCATIONS,
          value_parser = count)]
    invocations: u64,
    /// Seed.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Output workload CSV (`--out` works too, as for the other commands). A
    /// device or FIFO (/dev/null, /dev/stdout) is written in place and a
    /// symlink's target file is replaced; until done the file is written as
    /// hidden .NAME.faasched-partial.PID, which the next run removes if this
    /// one was killed.
    #[arg(long, short = 'o', visible_alias = "out")]
    output: PathBuf,
}

/// `--arrivals`: each placement by its name, with what it does.
fn arrivals() -> impl TypedValueParser<Value = Arrivals> {
    let values = Arrivals::ALL.map(|a| PossibleValue::new(a.name()).help(a.about()));
    PossibleValuesParser::new(values).map(|s| s.parse().expect("a possible value is a name"))
}

/// Options every importer shares.
#[derive(ClapArgs, Debug)]
pub struct Common {
    /// Keep this many functions (at least 1), sampled uniformly with the
    /// seed (default: every function).
    #[arg(long, value_parser = count)]
    functions: Option<u64>,
    /// Seed of every random choice.
    #[arg(long, short = 's', default_value_t = 1)]
    seed: u64,
    /// Rescale arrivals to this offered load on --cores.
    #[arg(long, short = 'l', requires = "cores", value_parser = faasched_lab::workload::load)]
    load: Option<f64>,
    /// Cores the load is computed for, 1 to 256 (with --load, or to report
    /// the load; no default).
    #[arg(long, short = 'c', value_parser = clap::value_parser!(u16).range(1..=256))]
    cores: Option<u16>,
    /// Output workload CSV (`--out` works too, as for the other commands). A
    /// device or FIFO (/dev/null, /dev/stdout) is written in place and a
    /// symlink's target file is replaced; until done the file is written as
    /// hidden .NAME.faasched-partial.PID, which the next run removes if this
    /// one was killed.
    #[arg(long, short = 'o', visible_alias = "out")]
    output: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum Import {
    /// Azure Functions 2019: DIR holds one day's invocations, durations and memory files.
    #[command(name = "azure-2019")]
    Azure2019 {
        /// Directory of the dataset's CSV files.
        dir: PathBuf,
        /// Day of the dataset, 1..=14.
        #[arg(long, default_value_t = 1)]
        day: u32,
        /// Minutes of the day to keep, 1-based and inclusive, like 540..690
        /// (default: every minute the invocations file has, the whole day of a
        /// published day, a sample's own minutes).
        #[arg(long, value_parser = parse_range::<u32>)]
        minutes: Option<RangeInclusive<u32>>,
        /// How the k invocations of a function in a minute are placed in it.
        #[arg(long, default_value = "uniform", value_parser = arrivals())]
        arrivals: Arrivals,
        #[command(flatten)]
        common: Common,
    },
    /// Azure Functions 2021: one CSV of app,func,end_timestamp,duration.
    #[command(name = "azure-2021")]
    Azure2021 {
        /// The trace file.
        file: PathBuf,
        /// Keep invocations starting in this window of trace seconds: A..B
        /// keeps those starting from A up to, not including, B (like 0..3600
        /// for the first hour, or 0.5..1.25; default: all).
        #[arg(long, value_parser = parse_window)]
        seconds: Option<Range<f64>>,
        #[command(flatten)]
        common: Common,
    },
    /// Huawei 2023: DIR holds requests_minute/ and function_delay_minute/.
    #[command(name = "huawei-2023")]
    Huawei2023 {
        /// Directory of the release's metric folders.
        dir: PathBuf,
        /// Days to read, by the numbers of the release's day files
        /// (`day_01.csv`, `day_001.csv`), inclusive, like 1 or 1..3.
        #[arg(long, default_value = "0", value_parser = parse_range::<u32>)]
        days: RangeInclusive<u32>,
        /// Minutes of the selection to keep, 1-based and inclusive, like
        /// 1..60 (default: all of the days read).
        #[arg(long, value_parser = parse_range::<u64>)]
        minutes: Option<RangeInclusive<u64>>,
        /// How the k invocations of a function in a minute are placed in it.
        #[arg(long, default_value = "uniform", value_parser = arrivals())]
        arrivals: Arrivals,
        #[command(flatten)]
        common: Common,
    },
}

impl Import {
    /// The import these flags ask for.
    fn options(self) -> workload::Import {
        let (trace, common) = match self {
            Import::Azure2019 {
                dir,
                day,
                minutes,
                arrivals,
                common,
            } => (
                TraceFiles::Azure2019 {
                    dir,
                    day,
                    minutes,
                    arrivals,
                },
                common,
            ),
            Import::Azure2021 {
                file,
                seconds,
                common,
            } => (TraceFiles::Azure2021 { file, seconds }, common),
            Import::Huawei2023 {
                dir,
                days,
                minutes,
                arrivals,
                common,
            } => (
                TraceFiles::Huawei2023 {
                    dir,
                    days,
                    minutes,
                    arrivals,
                },
                common,
            ),
        };
        workload::Import {
            trace,
            functions: common.functions,
            seed: common.seed,
            load: common.load,
            cores: common.cores.map(usize::from),
            output: common.output,
        }
    }
}
