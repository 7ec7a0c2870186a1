//! Progress bars on stderr, hidden when stderr is not a terminal.

pub use indicatif::ProgressBar;
use indicatif::ProgressStyle;

/// [`bar`] of a run of known length.
const BAR: &str = "{prefix:>12} [{bar:40}] {pos}/{len} invocations ({per_sec}, eta {eta})";
/// [`bar`] of a run of unknown length.
const COUNT: &str = "{prefix:>12} {pos} invocations ({per_sec})";
/// [`runs`].
const RUNS: &str = "{prefix:>10} [{bar:40}] {pos}/{len} runs ({elapsed}) {msg}";

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

/// A bar counting `len` runs, labelled `name`.
pub fn runs(name: &str, len: u64) -> ProgressBar {
    styled(ProgressBar::new(len), RUNS, name)
}

fn styled(bar: ProgressBar, template: &str, name: &str) -> ProgressBar {
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
    fn templates_parse() {
        for t in [BAR, COUNT, RUNS] {
            assert!(ProgressStyle::with_template(t).is_ok(), "{t}");
        }
    }
}
