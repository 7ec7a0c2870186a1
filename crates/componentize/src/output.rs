//! Writing outputs whole or not at all.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: into a temporary file in the same
/// folder, then renamed over `path`, so that a run cut short leaves either
/// the old file or the new one, never half of one. The file is readable by
/// all (mode 0644 less the umask), as one written by `cp` would be.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let mut file = builder
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .with_context(|| format!("cannot write {}", file.path().display()))?;
    file.persist(path)
        .with_context(|| format!("cannot move the new file into place at {}", path.display()))?;
    Ok(())
}
