//! A run's output files, put in place together.
//!
//! A command that writes several files (`simulate --out`: summary.json,
//! summary.csv, invocations.csv, report.html) writes each under a hidden
//! name beside its place and renames them all once the last is written. A
//! run that fails before then (a bad row in its workload, a full disk while
//! writing its summary) leaves the files of an earlier run as they were:
//! all of them, neither truncated nor mixed with this run's.
//!
//! # What is at the path
//!
//! [`Staged::create`] looks at what the path names, following symbolic
//! links, and:
//!
//! 1. nothing, or a regular file: writes `.NAME.faasched-partial.PID` (PID
//!    the writing process's id) in the same directory and renames it onto
//!    NAME at [`Staged::commit`];
//! 2. a symbolic link (or a chain of them) to a regular file or to nothing:
//!    the same, beside the file the last link names. The link stays and
//!    its target is replaced, as a shell's `>` would write through it;
//! 3. a link that resolves through `/proc` to a regular file (`/dev/stdout`
//!    or `/dev/fd/1` with standard output redirected to a file): that is an
//!    open descriptor, so the file is opened for appending and written in
//!    place. Renaming would replace whatever file the descriptor's name
//!    points to, which is not where the descriptor writes;
//! 4. a character device or a FIFO (`/dev/null`, a terminal, `/dev/stdout`
//!    on a pipe, a named pipe): opened and written in place as the run goes.
//!    Such a file cannot be staged, and renaming onto it would replace the
//!    device node with a regular file. Opening a FIFO waits for a reader;
//! 5. a directory, a block device or a socket: refused with an error naming
//!    the path before anything is written. A file cannot take a
//!    directory's place, a CSV written over a disk is never what was meant,
//!    and a socket cannot be opened.
//!
//! Files written in place (3 and 4) are not undone when the run fails: what
//! was written has been read or appended already.
//!
//! Renames within a directory do not fail for want of space; the one a user
//! can cause to fail, onto a directory, is refused at [`Staged::create`] and
//! again before any file is renamed.
//!
//! # After a killed run
//!
//! A run killed outright (`SIGKILL`, a power cut) cannot clean up, so what
//! it leaves carries its PID and the next run clears it:
//!
//! 1. each directory [`Staged::create_dir`] makes holds a marker file,
//!    `.faasched-partial-dir.PID`, until the commit;
//! 2. before a run creates a file or directory inside a directory, it
//!    removes the partial files and markers there whose PID names no
//!    running process; where it removed such a marker (the directory was
//!    made by a run that died), it does the same in the parent directory;
//! 3. those of a running process stay: two runs may write side by side.
//!
//! The directories a killed run made stay: the next run that writes into
//! one (the same `--out`) clears it and uses it; any other is left to the
//! user, empty but for hidden leftovers.
//!
//! A PID names a running process when `/proc/PID` exists; without `/proc`
//! every PID counts as running and nothing is removed. Runs in different
//! PID namespaces (containers) must not share one output directory: the
//! other namespace's PIDs would read as not running.

use crate::{Error, Result};
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Between a staged file's name and the writer's PID:
/// `.NAME.faasched-partial.PID`.
const PARTIAL: &str = ".faasched-partial";

/// A directory's marker before the writer's PID: `.faasched-partial-dir.PID`.
const DIR_MARKER: &str = ".faasched-partial-dir";

/// Symbolic links followed before giving up (the kernel's own limit,
/// `MAXSYMLINKS` in Linux's `fs/namei.c`).
const MAX_LINKS: usize = 40;

/// Files written under hidden names until [`Staged::commit`] puts them in
/// place. Dropped without a commit (an error on the way), it removes them.
#[derive(Debug, Default)]
pub struct Staged {
    /// The files to rename at the commit, in the order created.
    files: Vec<Pending>,
    /// Directories [`Staged::create_dir`] made, outermost first: removed
    /// (if still empty) when the files are.
    dirs: Vec<PathBuf>,
    /// Directories already cleared of dead runs' leftovers.
    swept: HashSet<PathBuf>,
}

/// A file written under a hidden name.
#[derive(Debug)]
struct Pending {
    /// Where it is written.
    partial: PathBuf,
    /// Where the commit puts it (the path asked for, links followed).
    target: PathBuf,
    /// The path asked for, which errors name.
    asked: PathBuf,
}

/// How a path is written: see the module docs.
enum Place {
    /// Beside `target`, renamed onto it at the commit (cases 1 and 2).
    Staged(PathBuf),
    /// Opened in place, for appending (case 3) or not (case 4).
    InPlace { append: bool },
}

impl Staged {
    /// No files yet.
    pub fn new() -> Staged {
        Staged::default()
    }

    /// Creates directory `dir` and its missing parents; those it made carry
    /// a marker until the commit and are removed again, if empty, should the
    /// run not commit. A file where `dir` or one of its parents should be is
    /// refused as "not a directory". Errors name the offending path.
    pub fn create_dir(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut existing = None;
        for d in dir.ancestors().filter(|d| !d.as_os_str().is_empty()) {
            match fs::metadata(d) {
                Ok(m) if m.is_dir() => {
                    existing = Some(d);
                    break;
                }
                Ok(m) => {
                    let what = format!("not a directory ({} is there)", kind(&m));
                    return Err(Error::io(d, io::Error::new(ErrorKind::NotADirectory, what)));
                }
                // Not a directory: a parent is a file, named when reached.
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                    missing.push(d);
                }
                Err(e) => return Err(Error::io(d, e)),
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        self.sweep(existing.unwrap_or(Path::new(".")));
        let marker = marker_name(std::process::id());
        for d in missing.into_iter().rev() {
            match fs::create_dir(d) {
                Ok(()) => {
                    self.dirs.push(d.to_path_buf());
                    File::create(d.join(&marker)).map_err(|e| Error::io(d, e))?;
                }
                // Another run made it meanwhile: it is theirs.
                Err(e) if e.kind() == ErrorKind::AlreadyExists && d.is_dir() => {}
                Err(e) => return Err(Error::io(d, e)),
            }
        }
        Ok(())
    }

    /// Opens the file that [`Staged::commit`] puts at `path` (or, for a
    /// device or FIFO, `path` itself: see the module docs). `path`'s
    /// directory must exist. Errors name `path`, the file the user asked for.
    pub fn create(&mut self, path: &Path) -> Result<File> {
        let target = match place(path).map_err(|e| Error::io(path, e))? {
            Place::InPlace { append } => {
                return OpenOptions::new()
                    .write(!append)
                    .append(append)
                    .open(path)
                    .map_err(|e| Error::io(path, e));
            }
            Place::Staged(target) => target,
        };
        let Some(name) = target.file_name() else {
            let none = io::Error::new(ErrorKind::InvalidInput, "names no file");
            return Err(Error::io(path, none));
        };
        let partial = target.with_file_name(partial_name(name, std::process::id()));
        self.sweep(parent(&target));
        let file = File::create(&partial).map_err(|e| Error::io(path, e))?;
        self.files.push(Pending {
            partial,
            target,
            asked: path.to_path_buf(),
        });
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
    /// they were created, then removes the markers of the directories it
    /// made. A place taken by a directory is refused before any file moves;
    /// if a rename fails all the same, the files not yet renamed are removed.
    pub fn commit(mut self) -> Result<()> {
        if let Some(p) = self.files.iter().find(|p| p.target.is_dir()) {
            return Err(Error::io(&p.asked, a_directory_is_there()));
        }
        while let Some(p) = self.files.first() {
            fs::rename(&p.partial, &p.target).map_err(|e| Error::io(&p.asked, e))?;
            self.files.remove(0);
        }
        // The directories hold the run's files now. A marker that stays (a
        // failed removal) is a dead process's once this one ends: the next
        // run removes it.
        let marker = marker_name(std::process::id());
        for dir in std::mem::take(&mut self.dirs) {
            let _ = fs::remove_file(dir.join(&marker));
        }
        Ok(())
    }

    /// Removes dead runs' leftovers from `dir`, then from its parents while
    /// the directory swept was made by a dead run (step 2 of the module
    /// docs). Best effort: a leftover that cannot be removed is harmless.
    fn sweep(&mut self, dir: &Path) {
        let me = std::process::id();
        let mut dir = dir.to_path_buf();
        while self.swept.insert(dir.clone()) && sweep(&dir, me) {
            match dir.parent() {
                Some(_) => dir = parent(&dir).to_path_buf(),
                None => break, // the root
            }
        }
    }
}

impl Drop for Staged {
    /// Removes the files of a run that did not finish (best effort: the
    /// error that stopped the run is the one to report).
    fn drop(&mut self) {
        for p in &self.files {
            let _ = fs::remove_file(&p.partial);
        }
        // Innermost first; `remove_dir` leaves a directory that is not empty.
        let marker = marker_name(std::process::id());
        for dir in self.dirs.iter().rev() {
            let _ = fs::remove_file(dir.join(&marker));
            let _ = fs::remove_dir(dir);
        }
    }
}

/// How `path` is written, by what is there (the cases of the module docs).
fn place(path: &Path) -> io::Result<Place> {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(m) if m.file_type().is_char_device() || m.file_type().is_fifo() => {
            return Ok(Place::InPlace { append: false });
        }
        Ok(m) if m.is_dir() => return Err(a_directory_is_there()),
        Ok(m) => {
            let what = format!(
                "{} is there; output goes to regular files, character devices and FIFOs only",
                kind(&m)
            );
            return Err(io::Error::new(ErrorKind::InvalidInput, what));
        }
        // Nothing there, or a link to nothing.
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let is_link = fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return Ok(Place::Staged(at));
        }
        let dir = parent(&at).to_path_buf();
        if fs::canonicalize(&dir).is_ok_and(|d| d.starts_with("/proc")) {
            return Ok(Place::InPlace { append: true });
        }
        at = dir.join(fs::read_link(&at)?);
    }
    Err(io::Error::new(
        ErrorKind::InvalidInput,
        format!("more than {MAX_LINKS} symbolic links to follow"),
    ))
}

/// The error of a file whose place a directory takes.
fn a_directory_is_there() -> io::Error {
    io::Error::new(ErrorKind::IsADirectory, "a directory is there")
}

/// What `m` describes, for an error: "a regular file", "a socket", ...
fn kind(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// The directory `path` is in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `.NAME.faasched-partial.PID`.
fn partial_name(name: &OsStr, pid: u32) -> OsString {
    let mut partial = OsString::from(".");
    partial.push(name);
    partial.push(format!("{PARTIAL}.{pid}"));
    partial
}

/// `.faasched-partial-dir.PID`.
fn marker_name(pid: u32) -> String {
    format!("{DIR_MARKER}.{pid}")
}

/// The writer's PID of a partial file or marker called `name`, and whether
/// it is a marker; `None` for any other name.
fn leftover(name: &OsStr) -> Option<(u32, bool)> {
    let bytes = name.as_encoded_bytes();
    let dot = bytes.iter().rposition(|&b| b == b'.')?;
    let (stem, pid) = (&bytes[..dot], &bytes[dot + 1..]);
    if pid.is_empty() || !pid.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let pid = std::str::from_utf8(pid).ok()?.parse().ok()?;
    if stem == DIR_MARKER.as_bytes() {
        Some((pid, true))
    } else if stem.len() > PARTIAL.len() + 1
        && stem.starts_with(b".")
        && stem.ends_with(PARTIAL.as_bytes())
    {
        Some((pid, false))
    } else {
        None
    }
}

/// Whether process `pid` runs (or might: see the module docs).
fn running(pid: u32) -> bool {
    !Path::new("/proc/self").exists() || Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes from `dir` the partial files and markers of processes other
/// than `me` that no longer run; true if a marker was among them.
fn sweep(dir: &Path, me: u32) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    let mut made_by_dead = false;
    for entry in entries.flatten() {
        let Some((pid, marker)) = leftover(&entry.file_name()) else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if pid == me || !is_file || running(pid) {
            continue;
        }
        let _ = fs::remove_file(entry.path());
        made_by_dead |= marker;
    }
    made_by_dead
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::process::Command;

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A PID that no process has: one past the kernel's limit.
    fn dead_pid() -> u32 {
        let max: u32 = fs::read_to_string("/proc/sys/kernel/pid_max")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        max + 1
    }

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
        let pid = std::process::id();
        assert!(
            names(dir.path()).contains(&format!(".b.json.faasched-partial.{pid}")),
            "{:?}",
            names(dir.path())
        );
        staged.commit().unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "new a");
        assert_eq!(fs::read_to_string(&b).unwrap(), "new b");
        assert_eq!(names(dir.path()), ["a.csv", "b.json"]);
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
        assert_eq!(names(dir.path()), ["a.csv"]);
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
        assert_eq!(names(&made), ["x.csv"]);
        assert_eq!(names(&kept.join("a")), ["b"]);
    }

    #[test]
    fn a_place_taken_by_a_directory_moves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        fs::write(&a, "old a").unwrap();
        let b = dir.path().join("b.json");
        let mut staged = Staged::new();
        staged.write(&a, b"new a").unwrap();
        // A directory already there is refused at once...
        fs::create_dir(&b).unwrap();
        let err = staged.write(&b, b"b").unwrap_err().to_string();
        assert!(
            err.contains("b.json") && err.contains("a directory"),
            "{err}"
        );
        fs::remove_dir(&b).unwrap();
        // ...and one that appears before the commit stops it.
        staged.write(&b, b"b").unwrap();
        fs::create_dir(&b).unwrap();
        let err = staged.commit().unwrap_err().to_string();
        assert!(err.contains("b.json"), "{err}");
        assert_eq!(fs::read_to_string(&a).unwrap(), "old a");
        assert_eq!(names(dir.path()), ["a.csv", "b.json"]);
    }

    #[test]
    fn a_file_where_a_directory_goes_is_named_as_not_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "x").unwrap();
        for asked in [file.clone(), file.join("sub")] {
            let err = Staged::new().create_dir(&asked).unwrap_err().to_string();
            let want = format!(
                "{}: not a directory (a regular file is there)",
                file.display()
            );
            assert_eq!(err, want);
        }
        assert_eq!(fs::read_to_string(&file).unwrap(), "x");
    }

    #[test]
    fn a_link_to_a_file_keeps_the_link_and_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::create_dir(&real).unwrap();
        let target = real.join("w.csv");
        fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink("real/w.csv", &link).unwrap();
        let mut staged = Staged::new();
        staged.write(&link, b"new").unwrap();
        assert!(
            names(&real)[0].starts_with(".w.csv.faasched-partial."),
            "{:?}",
            names(&real)
        );
        staged.commit().unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(names(&real), ["w.csv"]);

        // A link to nothing yet: its target is made.
        let dangling = dir.path().join("dangling.csv");
        std::os::unix::fs::symlink("real/new.csv", &dangling).unwrap();
        let mut staged = Staged::new();
        staged.write(&dangling, b"made").unwrap();
        staged.commit().unwrap();
        assert!(fs::symlink_metadata(&dangling).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(real.join("new.csv")).unwrap(), "made");
    }

    #[test]
    fn a_fifo_is_written_through_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // The reader opens first (its open waits for the writer's).
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut text = String::new();
                File::open(fifo).unwrap().read_to_string(&mut text).unwrap();
                text
            })
        };
        let mut staged = Staged::new();
        let mut file = staged.create(&fifo).unwrap();
        file.write_all(b"through").unwrap();
        drop(file);
        staged.commit().unwrap();
        assert_eq!(reader.join().unwrap(), "through");
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), ["pipe"]);
    }

    #[test]
    fn a_character_device_is_written_through_and_a_socket_refused() {
        let dir = tempfile::tempdir().unwrap();
        // A twin of /dev/null (character device 1:3), which only root makes.
        let null = dir.path().join("null");
        let made = Command::new("mknod")
            .arg(&null)
            .args(["c", "1", "3"])
            .output();
        if made.is_ok_and(|o| o.status.success()) {
            let mut staged = Staged::new();
            staged.write(&null, b"gone").unwrap();
            staged.commit().unwrap();
            assert!(fs::metadata(&null).unwrap().file_type().is_char_device());
            assert_eq!(names(dir.path()), ["null"]);
        } else {
            eprintln!("skipped the character device: mknod needs root");
        }

        let socket = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let err = Staged::new().write(&socket, b"x").unwrap_err().to_string();
        assert!(err.contains("sock: a socket is there"), "{err}");
        assert!(fs::metadata(&socket).unwrap().file_type().is_socket());
    }

    #[test]
    fn leftovers_of_dead_runs_go_and_those_of_running_ones_stay() {
        let root = tempfile::tempdir().unwrap();
        let (dead, live) = (dead_pid(), 1); // init runs as long as the system
        // A dead run made out/ and out/sub/, and wrote in both.
        let out = root.path().join("out");
        let sub = out.join("sub");
        fs::create_dir_all(&sub).unwrap();
        for (dir, name) in [(&out, "a.csv"), (&sub, "b.csv")] {
            fs::write(dir.join(marker_name(dead)), "").unwrap();
            fs::write(dir.join(partial_name(name.as_ref(), dead)), "dead").unwrap();
        }
        // A live one writes beside it, with the same file names.
        fs::write(sub.join(marker_name(live)), "").unwrap();
        fs::write(sub.join(partial_name("b.csv".as_ref(), live)), "live").unwrap();
        // Names that only look alike are not touched.
        for other in [
            ".faasched-partial.7",
            "x.faasched-partial.7",
            ".a.faasched-partial.7x",
        ] {
            fs::write(sub.join(other), "").unwrap();
        }

        let mut staged = Staged::new();
        staged.write(&sub.join("b.csv"), b"new").unwrap();
        staged.commit().unwrap();
        let me = std::process::id();
        assert_eq!(
            names(&sub),
            [
                ".a.faasched-partial.7x".to_string(),
                format!(".b.csv.faasched-partial.{live}"),
                ".faasched-partial-dir.1".to_string(),
                ".faasched-partial.7".to_string(),
                "b.csv".to_string(),
                "x.faasched-partial.7".to_string(),
            ],
            "(this process is {me})"
        );
        // out/ held a dead marker too, swept because sub/'s was dead.
        assert_eq!(names(&out), ["sub"]);
    }

    #[test]
    fn a_marker_stays_until_the_commit() {
        let root = tempfile::tempdir().unwrap();
        let made = root.path().join("made");
        let mut staged = Staged::new();
        staged.create_dir(&made).unwrap();
        let marker = marker_name(std::process::id());
        assert_eq!(names(&made), [marker]);
        staged.write(&made.join("x"), b"x").unwrap();
        staged.commit().unwrap();
        assert_eq!(names(&made), ["x"]);
    }

    #[test]
    fn leftover_names_parse() {
        assert_eq!(
            leftover(".a.csv.faasched-partial.12".as_ref()),
            Some((12, false))
        );
        assert_eq!(
            leftover(".faasched-partial-dir.3".as_ref()),
            Some((3, true))
        );
        for other in [
            "a.csv",
            ".a.csv.partial",
            ".a.faasched-partial.",
            ".a.faasched-partial.+1",
            ".faasched-partial.1",
            "a.faasched-partial.1",
            ".faasched-partial-dir.x",
        ] {
            assert_eq!(leftover(other.as_ref()), None, "{other}");
        }
    }
}
