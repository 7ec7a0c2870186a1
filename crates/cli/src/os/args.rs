//! The options several commands share, and what they turn into: a workload
//! ([`WorkloadOptions`]) and a simulated kernel ([`Kernel`]).

use clap::{Args as ClapArgs, ValueEnum};
use faasched_lab::os::run::{
    DEFAULT_CONTEXT_SWITCH_US, DEFAULT_HZ, Fair, Kernel, MAX_HZ, MAX_KNOB_US, WorkloadOptions,
};

/// A number of invocations for a flag: a whole number, at least 1.
pub use faasched_lab::workload::count;

/// Which workload to run, on how many cores.
#[derive(ClapArgs, Debug, Clone)]
pub struct WorkloadArgs {
    /// A built-in workload or a workload CSV file. Built-ins: huawei, azure,
    /// lognormal[:scale=F], exponential[:mean-ms=F], fixed[:cpu-ms=F],
    /// bimodal[:p=F,short-us=N,long-us=N], bimodal-high, bimodal-extreme,
    /// mixed-io.
    #[arg(long, short = 'w', default_value = "huawei", value_name = "NAME|FILE")]
    pub workload: String,
    /// Cores, 1 to 256: of the simulated machine (default 56), or for
    /// `replay` and `compare` the first N CPUs of this one (default: all
    /// online CPUs; `compare` simulates as many).
    #[arg(long, short = 'c', value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub cores: Option<u16>,
    /// Offered load (CPU demand / core-time). Built-ins default to 0.9; a file
    /// is used as it is unless this asks to rescale its arrivals.
    #[arg(long, short = 'l', value_name = "FRACTION")]
    pub load: Option<f64>,
    /// Invocations to generate (built-ins) or to take from the start of a
    /// file. Default: 15000 of a built-in and all of a file for `simulate`;
    /// 1000 of either for `replay` and `compare`.
    #[arg(long, short = 'n', value_parser = count)]
    pub invocations: Option<u64>,
    /// Seed of every random choice: a simulation with the same seed and
    /// inputs writes the same bytes (a live run draws the same workload).
    #[arg(long, short = 's', default_value_t = 1)]
    pub seed: u64,
}

impl WorkloadArgs {
    /// The workload these flags ask for.
    pub fn options(self) -> WorkloadOptions {
        WorkloadOptions {
            workload: self.workload,
            cores: self.cores.map(usize::from),
            load: self.load,
            invocations: self.invocations,
            seed: self.seed,
        }
    }
}

/// The simulated kernel's knobs.
#[derive(ClapArgs, Debug, Clone)]
pub struct KernelArgs {
    /// Fair class of the simulated kernel: eevdf (Linux ≥ 6.6, the default) or
    /// cfs (legacy, the papers' 5.x kernels).
    #[arg(long, value_enum, default_value_t = FairArg::Eevdf)]
    fair: FairArg,
    /// Timer frequency of the simulated kernel, in Hz (ticks per second),
    /// 1 to 10000.
    #[arg(long, default_value_t = DEFAULT_HZ, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_HZ)))]
    hz: u32,
    /// Core time each context switch costs, in µs (ALPS measured 3.5 µs); at
    /// least 0 and shorter than a tick.
    #[arg(
        long,
        default_value_t = DEFAULT_CONTEXT_SWITCH_US,
        value_name = "US"
    )]
    context_switch_us: f64,
    /// Hear CPU watches (sfs's and hybrid's demotions) as a live watcher
    /// does on a stock kernel: at the first tick at or after the task's CPU
    /// time reaches the watch, when the kernel accounts it, plus US µs to
    /// act (`faasched replay` measures about 340 µs from the tick to the
    /// demotion, at the median). By default a watch is heard at the instant
    /// it is reached.
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(0..=MAX_KNOB_US))]
    watch_at_tick_us: Option<u64>,
    /// EEVDF's base slice, in µs. By default Linux's: 700 µs × (1 +
    /// log2 of the cores, up to 8), so 1,400 on 2 cores and 2,800 on 8 or
    /// more. (`compare` takes the live kernel's, which it scales by the CPUs
    /// online, not by the cores a replay uses.)
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(1..=MAX_KNOB_US))]
    base_slice_us: Option<u64>,
}

/// A fair class, as the command line names it.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum FairArg {
    /// Earliest eligible virtual deadline first.
    Eevdf,
    /// The legacy Completely Fair Scheduler.
    Cfs,
}

impl KernelArgs {
    /// The kernel these flags ask for.
    pub fn kernel(self) -> Kernel {
        Kernel {
            fair: match self.fair {
                FairArg::Eevdf => Fair::Eevdf,
                FairArg::Cfs => Fair::Cfs,
            },
            hz: self.hz,
            context_switch_us: self.context_switch_us,
            watch_at_tick_us: self.watch_at_tick_us,
            base_slice_us: self.base_slice_us,
        }
    }
}
