//! Progress bars on stderr, hidden when stderr is not a terminal or
//! after [`quiet`] (`--quiet`).

pub use indicatif::ProgressBar;
use indicatif::{ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by [`quiet`]: every bar made after is hidden.
static QUIET: AtomicBool = AtomicBool::new(false);

/// How often a [`phase`]'s spinner turns by itself.
const TICK: Duration = Duration::from_millis(100);

/// [`bar`] of a run of known length.
const BAR: &str = "{prefix:>12} [{bar:40}] {pos}/{len} invocations ({per_sec}, eta {eta})";
/// [`bar`] of a run of unknown length.
const COUNT: &str = "{prefix:>12} {pos} invocations ({per_sec})";
/// [`runs`].
const RUNS: &str = "{prefix:>10} [{bar:40}] {pos}/{len} runs ({elapsed}) {msg}";
/// [`phase`].
const PHASE: &str = "{prefix:>12} {spinner} {msg} ({elapsed})";

/// Hides every bar made from now on: the `--quiet` of every command.
pub fn quiet() {
    QUIET.store(true, Ordering::Relaxed);
}

/// Whether [`quiet`] was called.
pub fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// A bar counting the invocations of a run labelled `name`.
pub fn bar(name: &str, len: Option<u64>) -> ProgressBar {
    // Without a length, a count: a bar and an eta would have nothing to
    // measure against.
    let (bar, template) = match len {
        Some(n) => (ProgressBar::new(n), BAR),
        None => (ProgressBar::no_length(), COUNT),
    };
    styled(bar, template, name)
}

/// Runs `run` on each of `items` in turn (a command's policies, one after
/// another), each under a [`bar`] of its own, named `name(item)`, of
/// `len` invocations if known, that `run` advances; the results in order,
/// or the first error.
pub fn each<T, R>(
    items: &[T],
    name: impl Fn(&T) -> String,
    len: Option<u64>,
    mut run: impl FnMut(&T, &ProgressBar) -> anyhow::Result<R>,
) -> anyhow::Result<Vec<R>> {
    items
        .iter()
        .map(|item| {
            let bar = bar(&name(item), len);
            let ran = run(item, &bar);
            bar.finish_and_clear();
            ran
        })
        .collect()
}

/// A bar counting `len` runs, labelled `name`.
pub fn runs(name: &str, len: u64) -> ProgressBar {
    styled(ProgressBar::new(len), RUNS, name)
}

/// A spinner for a step of unknown length (reading a trace), labelled
/// `name`, saying `what`, turning by itself until it is finished or
/// dropped.
fn phase(name: &str, what: &str) -> ProgressBar {
    let bar = styled(ProgressBar::new_spinner(), PHASE, name);
    bar.set_message(what.to_string());
    bar.enable_steady_tick(TICK);
    bar
}

/// Runs `step` under a [`phase`] spinner, cleared when it ends.
pub fn during<R>(name: &str, what: &str, step: impl FnOnce() -> R) -> R {
    let bar = phase(name, what);
    let done = step();
    bar.finish_and_clear();
    done
}

fn styled(bar: ProgressBar, template: &str, name: &str) -> ProgressBar {
    if QUIET.load(Ordering::Relaxed) {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(name.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_runs_in_order_and_stops_at_the_first_error() {
        let mut ran = Vec::new();
        let squares = each(
            &[1, 2, 3],
            |n| n.to_string(),
            Some(1),
            |&n, bar| {
                bar.inc(1);
                ran.push(n);
                Ok(n * n)
            },
        );
        assert_eq!(squares.unwrap(), [1, 4, 9]);
        ran.clear();
        let failed = each(
            &[1, 2, 3],
            |n| n.to_string(),
            None,
            |&n, _| {
                ran.push(n);
                match n {
                    2 => anyhow::bail!("two"),
                    n => Ok(n),
                }
            },
        );
        assert_eq!(failed.unwrap_err().to_string(), "two");
        assert_eq!(ran, [1, 2]);
    }

    #[test]
    fn templates_parse() {
        for t in [BAR, COUNT, RUNS, PHASE] {
            assert!(ProgressStyle::with_template(t).is_ok(), "{t}");
        }
    }
}
