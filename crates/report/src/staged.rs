//! A run's output files, put in place together.
//!
//! A command that writes several files (`simulate --out`: summary.json,
//! summary.csv, invocations.csv, report.html) writes each under a hidden
//! name beside its place, `.NAME.partial`, and renames them all once the
//! last is written. A run that fails before then (a bad row in its
//! workload, a full disk while writing its summary) leaves the files of an
//! earlier run as they were: all of them, neither truncated nor mixed with
//! this run's. Renames within a directory do not fail for want of space;
//! the one a user can cause to fail, onto a directory, is refused before
//! any file is renamed.

use crate::{Error, Result};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// Files written under hidden names until [`Staged::commit`] puts them in
/// place. Dropped without a commit (an error on the way), it removes them.
#[derive(Debug, Default)]
pub struct Staged {
    /// (where a file is written, where it goes), in the order created.
    files: Vec<(PathBuf, PathBuf)>,
    /// Directories [`Staged::create_dir`] made, outermost first: removed
    /// (if still empty) when the files are.
    dirs: Vec<PathBuf>,
}

impl Staged {
    /// No files yet.
    pub fn new() -> Staged {
        Staged::default()
    }

    /// Creates directory `dir` and its missing parents; those it made are
    /// removed again, if empty, should the run not commit. Errors name `dir`.
    pub fn create_dir(&mut self, dir: &Path) -> Result<()> {
        let missing: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .map(Path::to_path_buf)
            .collect();
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        self.dirs.extend(missing.into_iter().rev());
        Ok(())
    }

    /// Creates the hidden file that [`Staged::commit`] puts at `path`, in
    /// `path`'s directory (which must exist). Errors name `path`, the file
    /// the user asked for.
    pub fn create(&mut self, path: &Path) -> Result<File> {
        let name = path
            .file_name()
            .unwrap_or(path.as_os_str())
            .to_string_lossy();
        let partial = path.with_file_name(format!(".{name}.partial"));
        let file = File::create(&partial).map_err(|e| Error::io(path, e))?;
        self.files.push((partial, path.to_path_buf()));
        Ok(file)
    }

    /// Writes `bytes` as the file that [`Staged::commit`] puts at `path`.
    pub fn write(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        use std::io::Write;
        self.create(path)?
            .write_all(bytes)
            .map_err(|e| Error::io(path, e))
    }

    /// Puts every file in place, replacing what was there, in the order
    /// they were created. A place taken by a directory is refused before
    /// any file moves; if a rename fails all the same, the files not yet
    /// renamed are removed.
    pub fn commit(mut self) -> Result<()> {
        if let Some((_, path)) = self.files.iter().find(|(_, path)| path.is_dir()) {
            let taken =
                std::io::Error::new(std::io::ErrorKind::IsADirectory, "a directory is there");
            return Err(Error::io(path, taken));
        }
        while let Some((partial, path)) = self.files.first() {
            fs::rename(partial, path).map_err(|e| Error::io(path, e))?;
            self.files.remove(0);
        }
        self.dirs.clear(); // they hold the run's files now
        Ok(())
    }
}

impl Drop for Staged {
    /// Removes the files of a run that did not finish (best effort: the
    /// error that stopped the run is the one to report).
    fn drop(&mut self) {
        for (partial, _) in &self.files {
            let _ = fs::remove_file(partial);
        }
        // Innermost first; `remove_dir` leaves a directory that is not empty.
        for dir in self.dirs.iter().rev() {
            let _ = fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_in_place_before_the_commit_and_all_is_after() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.json"));
        fs::write(&a, "old a").unwrap();
        let mut staged = Staged::new();
        staged.write(&a, b"new a").unwrap();
        staged.write(&b, b"new b").unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "old a");
        assert!(!b.exists());
        staged.commit().unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "new a");
        assert_eq!(fs::read_to_string(&b).unwrap(), "new b");
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }

    #[test]
    fn a_run_that_stops_leaves_the_earlier_files_and_no_partial_ones() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        fs::write(&a, "old a").unwrap();
        let mut staged = Staged::new();
        staged.write(&a, b"new a").unwrap();
        // The second file cannot be created: its directory is missing.
        let missing = dir.path().join("no").join("b.json");
        let err = staged.write(&missing, b"b").unwrap_err().to_string();
        assert!(err.contains("b.json"), "{err}");
        drop(staged);
        assert_eq!(fs::read_to_string(&a).unwrap(), "old a");
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn directories_a_stopped_run_made_are_removed_and_others_kept() {
        let root = tempfile::tempdir().unwrap();
        let kept = root.path().join("kept");
        fs::create_dir(&kept).unwrap();
        let made = kept.join("a").join("b");
        let mut staged = Staged::new();
        staged.create_dir(&made).unwrap();
        staged.write(&made.join("x.csv"), b"x").unwrap();
        drop(staged);
        assert!(kept.is_dir() && !kept.join("a").exists());
        let mut staged = Staged::new();
        staged.create_dir(&made).unwrap();
        staged.write(&made.join("x.csv"), b"x").unwrap();
        staged.commit().unwrap();
        assert!(made.join("x.csv").is_file());
    }

    #[test]
    fn a_place_taken_by_a_directory_moves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        fs::write(&a, "old a").unwrap();
        // A directory where the second file goes: its rename would fail.
        let b = dir.path().join("b.json");
        fs::create_dir(&b).unwrap();
        let mut staged = Staged::new();
        staged.write(&a, b"new a").unwrap();
        staged.write(&b, b"b").unwrap();
        let err = staged.commit().unwrap_err().to_string();
        assert!(err.contains("b.json"), "{err}");
        assert_eq!(fs::read_to_string(&a).unwrap(), "old a");
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }
}
