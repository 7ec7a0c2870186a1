//! Output files the commands share: a run's invocations, a workload CSV.

use anyhow::{Context, Result};
use faasched_model::Invocation;
use faasched_report::Staged;
use faasched_report::os::InvocationsWriter;
use faasched_workload::csv;
use std::borrow::Borrow;
use std::path::Path;

/// The writer of `dir/invocations.csv`, staged in `staged`, creating `dir`
/// (removed again if the run stops and leaves it empty).
pub fn invocations_in(dir: &Path, staged: &mut Staged) -> Result<InvocationsWriter> {
    staged.create_dir(dir)?;
    Ok(InvocationsWriter::create(
        &dir.join("invocations.csv"),
        staged,
    )?)
}

/// Writes `invocations` as a workload CSV at `path`, staged in `staged`
/// (put in place at its commit: a run that stops part-way, an invocation
/// past the time limit or a full disk, leaves no file, or an earlier one as
/// it was). Owned invocations from a generator, borrowed ones from an
/// import.
pub fn write_workload<I: Borrow<Invocation>>(
    path: &Path,
    invocations: impl IntoIterator<Item = faasched_workload::Result<I>>,
    staged: &mut Staged,
) -> Result<()> {
    let mut w = csv::Writer::named(path, staged.create(path)?);
    for inv in invocations {
        w.write(inv?.borrow())?;
    }
    w.finish()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
