//! Output files shared by the commands that write a run's invocations.

use anyhow::Result;
use faasched_report::{InvocationsWriter, Staged};
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
