//! `node calibrate`: each cost the node simulator charges ([`Costs`]),
//! measured on this machine on the live runtime's own mechanisms, as the
//! simulator means it (each field's doc says what the engine charges it
//! for), and the `--costs` file that carries them to `node simulate`.
//!
//! Every value is the median of many samples (a shared machine's noise
//! moves a median far less than a mean); the timings themselves are
//! [`faasched_live::node::mechanism_costs`]'s.

use super::Costs;
use super::catalog::{Knowledge, node_policies};
use crate::bench::runtime::{long, node, noop, setups};
use crate::outln;
use anyhow::{Context, Result, bail};
use faasched_live::node::bench::preemptions;
use faasched_live::node::mechanism_costs::{self as live, Idle, median};
use faasched_live::os::unit_cpu::Machine;
use faasched_model::node::Dispatch;
use faasched_model::{MS, Nanos, SEC};
use faasched_policy::node::PreemptTest;
use faasched_report::Staged;
use faasched_sim::node::MAX_COST;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// `node calibrate`: the costs measured with `settings`, printed as a
/// table (or everything as JSON) and, with `out`, written to that file.
pub fn calibrate(out: Option<&Path>, json: bool, settings: Settings) -> Result<()> {
    let file = out.map(CostsFile::create).transpose()?;
    if cfg!(debug_assertions) {
        eprintln!(
            "debug build: its own code runs several times slower; calibrate with cargo run --release -- node calibrate"
        );
    }
    let c = measure(settings)?;
    if let Some(file) = file {
        file.write(&c)?;
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&c)?)?;
        return Ok(());
    }
    let m = &c.machine;
    outln!(
        "{} build, {} samples per cost (medians); {}, {} cores, kernel {}",
        c.build,
        c.settings.samples,
        m.cpu_model,
        m.cores,
        m.kernel
    )?;
    outln!(
        "{:<20} {:>11} {:>10}  how measured",
        "cost",
        "measured",
        "default"
    )?;
    for row in &c.rows {
        outln!(
            "{:<20} {:>8} ns {:>7} ns  {}",
            row.cost,
            row.measured_ns,
            row.default_ns,
            row.how
        )?;
        if row.cost == "wake" {
            let how = match c.costs.poll {
                true => "idle workers spin (--poll)",
                false => "idle workers sleep (--poll: they spin)",
            };
            outln!("{:<20} {:>11} {:>10}  {how}", "poll", c.costs.poll, false)?;
        }
    }
    let fit: Vec<String> = c
        .decisions
        .iter()
        .map(|p| format!("{} workers {} ns", p.workers, p.ns))
        .collect();
    outln!("decisions: {}", fit.join(", "))?;
    outln!(
        "check: the runtime's own switch (ask to the next request's start) p50 {} ns over {} preemptions; preempt_latency + the re-pick {} ns",
        c.check.runtime_p50_ns,
        c.check.preemptions,
        c.check.costs_ns
    )?;
    if let Some(path) = out {
        outln!("wrote {}", path.display())?;
    }
    Ok(())
}

/// Group sizes the decision cost is timed on, one worker to many.
pub const FIT_WORKERS: [usize; 5] = [1, 2, 4, 8, 16];

/// Requests each worker queues behind the one it runs while decisions are
/// timed: SledgeScale's scan reads each worker's queue.
pub const QUEUED: usize = 2;

/// Samples per cost by default: 5 to 10 s of a release build on a busy
/// 2-core machine.
pub const DEFAULT_SAMPLES: usize = 5_000;

/// Preemptions of the runtime check, at most: each waits for a 20 ms spin.
pub const CHECK_ROUNDS: usize = 30;

/// How long the check's spin runs before the urgent request comes: long
/// past its sandbox's set-up, well short of its 20 ms.
const SETTLE: Duration = Duration::from_millis(2);

/// The dispatch policy whose decisions are timed (the paper's).
const DECIDING: &str = "sledgescale";
/// A late-binding policy that hands one held request per idle worker.
const HOLDING: &str = "shinjuku";
/// A policy with a local quantum that never preempts by itself.
const TICKING: &str = "rr";

/// What a calibration does.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Settings {
    /// Samples per cost.
    pub samples: usize,
    /// Whether the file sets `poll = true` (idle workers spin); the polling
    /// hand-off is then measured too.
    pub poll: bool,
}

/// One decision size of the dispatch fit.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct FitPoint {
    /// Workers in the group.
    pub workers: usize,
    /// Workers a decision examined, on average (`Decision::scanned`).
    pub scanned: f64,
    /// Median dispatcher time per decision, ns.
    pub ns: Nanos,
}

/// One cost as measured.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The [`Costs`] field.
    pub cost: &'static str,
    /// What was measured, ns (what the file holds).
    pub measured_ns: Nanos,
    /// The simulator's default, ns.
    pub default_ns: Nanos,
    /// How it was measured.
    pub how: String,
}

/// The running runtime's own preemption latency, beside what the costs
/// make of it: a check that the split of a preemption into its costs
/// covers it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SwitchCheck {
    /// Preemptions the runtime made (an urgent no-op while a spin ran).
    pub preemptions: u64,
    /// Median from the dispatcher's ask to the worker starting the urgent
    /// request, as the runtime times it (`switch_us` of its status), ns.
    pub runtime_p50_ns: Nanos,
    /// What the costs make of the same span: `preempt_latency` and the
    /// worker's re-pick (`context_switch` less the sandbox's resume), ns.
    pub costs_ns: Nanos,
}

/// Everything a calibration measured.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// Where.
    pub machine: Machine,
    /// `debug`, `release` or `release+pgo`: a debug build's own code runs
    /// far slower.
    pub build: &'static str,
    /// What it did.
    pub settings: Settings,
    /// Two clock reads back to back, ns: taken off each sample timed alone.
    pub clock_ns: Nanos,
    /// The decisions the dispatch costs are fitted to.
    pub decisions: Vec<FitPoint>,
    /// Each cost, in [`Costs`] order.
    pub rows: Vec<Row>,
    /// With `--poll`, the polling hand-off to a spinning worker, ns (what
    /// the simulator then charges nothing for).
    pub polled_wake_ns: Option<Nanos>,
    /// The running runtime's preemptions against the costs.
    pub check: SwitchCheck,
    /// The costs file's contents.
    pub costs: Costs,
}

/// How this binary was built, as the calibration records it: `debug`, or
/// as the benches say ([`crate::bench::BUILD`]).
pub const BUILD: &str = if cfg!(debug_assertions) {
    "debug"
} else {
    crate::bench::BUILD
};

/// Least squares of `y = base + per × x`: `(base, per)`. With fewer than
/// two distinct `x`, all of `y`'s mean is `base`.
pub fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len().max(1) as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx == 0.0 {
        return (my, 0.0);
    }
    let per = sxy / sxx;
    (my - per * mx, per)
}

/// A measured value as the simulator takes it: whole ns, at least 1 (a
/// mechanism faster than the clock still costs something), at most
/// [`MAX_COST`].
fn ns(v: f64) -> Nanos {
    if v.is_finite() {
        (v.round() as Nanos).clamp(1, MAX_COST)
    } else {
        1
    }
}

fn policy(name: &str, workers: usize) -> Result<Box<dyn Dispatch + Send>> {
    let [p] = &node_policies(&[name.to_string()])?[..] else {
        bail!("one policy named {name}");
    };
    p.build(&Knowledge {
        workers: workers as u32,
        preempt_test: PreemptTest::Paper,
        darc_types: Vec::new(),
        darc_paper: None,
        stretch: 1,
        admission: Default::default(),
    })
}

/// Measures every cost, `settings.samples` times each.
pub fn measure(settings: Settings) -> Result<Calibration> {
    let n = settings.samples.max(1);
    let clock = live::clock_cost(n.max(1_000));
    let defaults = Costs::default();
    let mut decisions = Vec::new();
    for workers in FIT_WORKERS {
        let (times, scanned) =
            live::decisions(policy(DECIDING, workers)?, workers, QUEUED, n, clock);
        decisions.push(FitPoint {
            workers,
            scanned,
            ns: median(times),
        });
    }
    let points: Vec<_> = decisions.iter().map(|p| (p.scanned, p.ns as f64)).collect();
    let (base, per) = fit(&points);
    let idle = median(live::idle_pulls(policy(HOLDING, 1)?, n, clock)?);
    let repicks = live::repicks(policy(TICKING, 1)?, n, clock)?;
    let repick = median(repicks.switched);
    let sandboxes = faasched_wasm::Runtime::new(
        faasched_wasm::Config::new()
            .max_sandboxes(64)
            .memory_limit(64 << 20)
            .cpu_limit(SEC)
            // Only `noop` and `spin` by steps run: no need to time `spin`.
            .spin_steps_per_ms(1_000),
    )
    .context("the sandboxes")?;
    let signal = median(live::preempt_signals(&sandboxes.preempt(), n));
    let fiber = median(live::fiber_switches(&sandboxes, n, clock)?);
    let latency = median(live::preempt_latencies(&sandboxes, n)?);
    let setup = median(setups(&sandboxes, n as u64)?);
    let wake = median(live::wakes(n, Idle::Park)?);
    let polled_wake_ns = match settings.poll {
        true => Some(median(live::wakes(n, Idle::Spin)?)),
        false => None,
    };
    let costs = Costs {
        dispatch_base: ns(base),
        dispatch_per_worker: ns(per),
        idle_pull: ns(idle as f64),
        preempt_signal: ns(signal as f64),
        preempt_latency: ns(latency as f64),
        context_switch: ns((repick + fiber) as f64),
        sandbox_setup: ns(setup as f64),
        wake: ns(wake as f64),
        poll: settings.poll,
        quantum_tick: ns((median(repicks.kept) + fiber) as f64),
    };
    costs.validate()?;
    let check = switch_check(settings, costs.preempt_latency + repick)?;
    let sizes = format!("{}-{}", FIT_WORKERS[0], FIT_WORKERS[FIT_WORKERS.len() - 1]);
    let row = |cost, measured_ns, default_ns, how: String| Row {
        cost,
        measured_ns,
        default_ns,
        how,
    };
    let rows = vec![
        row(
            "dispatch_base",
            costs.dispatch_base,
            defaults.dispatch_base,
            format!(
                "{DECIDING}'s decisions through a dispatcher's group on {sizes} busy workers ({QUEUED} queued each): least-squares intercept"
            ),
        ),
        row(
            "dispatch_per_worker",
            costs.dispatch_per_worker,
            defaults.dispatch_per_worker,
            "the same fit's slope per worker examined".into(),
        ),
        row(
            "idle_pull",
            costs.idle_pull,
            defaults.idle_pull,
            format!(
                "an idle worker handed a request {HOLDING} held: on_idle, the hand-over, its start"
            ),
        ),
        row(
            "preempt_signal",
            costs.preempt_signal,
            defaults.preempt_signal,
            "Preempt::request: the worker's flag and an epoch bump".into(),
        ),
        row(
            "preempt_latency",
            costs.preempt_latency,
            defaults.preempt_latency,
            "from that request to a sandbox spinning on another thread stopped at its check".into(),
        ),
        row(
            "context_switch",
            costs.context_switch,
            defaults.context_switch,
            format!(
                "a sandbox's stop and resume ({fiber} ns) + the worker's re-pick of another request"
            ),
        ),
        row(
            "sandbox_setup",
            costs.sandbox_setup,
            defaults.sandbox_setup,
            "a fresh noop sandbox from the pool, as bench runtime times it".into(),
        ),
        row(
            "wake",
            costs.wake,
            defaults.wake,
            match polled_wake_ns {
                None => "a parked worker thread unparked (futex) until it runs".into(),
                Some(p) => format!(
                    "a parked worker thread unparked (futex) until it runs; ignored with poll: a spinning worker sees its work in {p} ns"
                ),
            },
        ),
        row(
            "quantum_tick",
            costs.quantum_tick,
            defaults.quantum_tick,
            format!(
                "a local quantum's re-pick that keeps the request ({TICKING}): a stop and resume + the group's answer"
            ),
        ),
    ];
    Ok(Calibration {
        machine: Machine::this(),
        build: BUILD,
        settings,
        clock_ns: clock,
        decisions,
        rows,
        polled_wake_ns,
        check,
        costs,
    })
}

/// Runs `sledgescale` live on one dispatcher and one worker (as `bench
/// runtime` does) through up to [`CHECK_ROUNDS`] preemptions of a spin
/// by an urgent no-op sent once the spin has run [`SETTLE`], and reads the
/// runtime's own switch latency.
fn switch_check(settings: Settings, costs_ns: Nanos) -> Result<SwitchCheck> {
    let runtime = node(settings.poll, Vec::new()).start()?;
    let rounds = settings.samples.clamp(1, CHECK_ROUNDS) as u64;
    preemptions(&runtime, rounds, SETTLE, long, || noop(MS))?;
    let switches = runtime.switches();
    runtime.stop();
    Ok(SwitchCheck {
        preemptions: switches.count,
        runtime_p50_ns: switches.p50,
        costs_ns,
    })
}

impl Calibration {
    /// The costs file as TOML, under a comment naming the machine and how
    /// the values were measured.
    pub fn toml(&self) -> Result<String> {
        let m = &self.machine;
        let mut text = format!(
            "# The node simulator's costs, ns, measured by `faasched node calibrate`\n\
             # ({} build, median of {} samples each). Use: faasched node simulate --costs FILE\n\
             # CPU: {}\n\
             # cores: {}\n\
             # kernel: {}\n",
            self.build, self.settings.samples, m.cpu_model, m.cores, m.kernel
        );
        for row in &self.rows {
            text.push_str(&format!("# {}: {}\n", row.cost, row.how));
        }
        text.push('\n');
        // Every field is a whole number or a bool, which TOML writes as
        // JSON does.
        let serde_json::Value::Object(fields) = serde_json::to_value(self.costs)? else {
            bail!("the costs are not a table");
        };
        for (key, value) in fields {
            text.push_str(&format!("{key} = {value}\n"));
        }
        Ok(text)
    }

    /// The costs file as JSON: the same keys, nothing else.
    pub fn json_file(&self) -> Result<String> {
        Ok(format!("{}\n", serde_json::to_string_pretty(&self.costs)?))
    }
}

/// A costs file's format, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.toml`.
    Toml,
    /// `.json`.
    Json,
}

impl Format {
    /// `path`'s format; an error names the path when its extension is
    /// neither.
    pub fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => Ok(Format::Toml),
            Some("json") => Ok(Format::Json),
            _ => bail!(
                "{}: a costs file is TOML (.toml) or JSON (.json), told apart by its extension",
                path.display()
            ),
        }
    }
}

/// A costs file being written: opened before the measurement, so that a
/// path that cannot be written fails at once, and put in place atomically
/// once written (nothing or a regular file there is replaced; a directory
/// is refused; see [`Staged`]).
pub struct CostsFile {
    path: std::path::PathBuf,
    format: Format,
    staged: Staged,
    file: std::fs::File,
}

impl CostsFile {
    /// Opens `path`'s staged file; errors name `path`.
    pub fn create(path: &Path) -> Result<CostsFile> {
        let format = Format::of(path)?;
        let mut staged = Staged::new();
        let file = staged.create(path)?;
        Ok(CostsFile {
            path: path.to_path_buf(),
            format,
            staged,
            file,
        })
    }

    /// Writes `calibration`'s costs in the file's format and puts it in
    /// place.
    pub fn write(mut self, calibration: &Calibration) -> Result<()> {
        use std::io::Write;
        let text = match self.format {
            Format::Toml => calibration.toml()?,
            Format::Json => calibration.json_file()?,
        };
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .with_context(|| format!("writing {}", self.path.display()))?;
        drop(self.file);
        self.staged.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::read_costs;

    #[test]
    fn the_fit_finds_a_line_through_its_points() {
        let (base, per) = fit(&[(1.0, 300.0), (2.0, 400.0), (4.0, 600.0)]);
        assert!((base - 200.0).abs() < 1e-9 && (per - 100.0).abs() < 1e-9);
        assert_eq!(fit(&[(3.0, 10.0), (3.0, 20.0)]), (15.0, 0.0));
    }

    #[test]
    fn a_value_is_whole_ns_at_least_one_and_at_most_the_largest_cost() {
        assert_eq!(ns(-5.0), 1);
        assert_eq!(ns(f64::NAN), 1);
        assert_eq!(ns(12.6), 13);
        assert_eq!(ns(1e18), MAX_COST);
    }

    #[test]
    fn a_calibration_writes_files_that_read_back_as_toml_and_json() {
        let c = measure(Settings {
            samples: 5,
            poll: true,
        })
        .unwrap();
        assert_eq!(c.rows.len(), 9);
        assert!(c.rows.iter().all(|r| r.measured_ns > 0));
        assert!(c.polled_wake_ns.is_some() && c.costs.poll);
        assert!(c.check.preemptions > 0 && c.check.runtime_p50_ns > 0);
        let dir = tempfile::tempdir().unwrap();
        for name in ["costs.toml", "costs.json"] {
            let path = dir.path().join(name);
            CostsFile::create(&path).unwrap().write(&c).unwrap();
            assert_eq!(read_costs(&path).unwrap(), c.costs, "{name}");
        }
        let text = c.toml().unwrap();
        assert!(text.starts_with("# The node simulator's costs"));
        assert!(text.contains("# CPU: ") && text.contains("# kernel: "));
    }

    #[test]
    fn a_costs_file_is_named_toml_or_json() {
        let err = Format::of(Path::new("out/costs.yaml")).unwrap_err();
        assert!(err.to_string().contains("out/costs.yaml"), "{err}");
        assert_eq!(Format::of(Path::new("c.json")).unwrap(), Format::Json);
    }

    #[test]
    fn a_directory_in_the_way_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("costs.toml");
        std::fs::create_dir(&path).unwrap();
        let err = CostsFile::create(&path).err().unwrap();
        assert!(format!("{err:#}").contains("costs.toml"), "{err:#}");
        assert!(path.is_dir());
    }
}
