//! The agent's memory across its own restart: the processes it steers, in a
//! journal beside its socket, one JSON object a line.
//!
//! A hand-over appends `{"add":ENTRY}` and an end appends `{"remove":TASK}`:
//! one `write` each, with no rename, truncation or flush, which on a disk
//! file system (ext4 writes a renamed-over file's data back at once) would
//! cost the agent more than all its other work. The journal is rewritten
//! whole (a temporary file renamed over it, so a reader never sees half of
//! one) when the agent starts and once it holds many more lines than
//! processes. A line cut short by a crash is the last one and is ignored.
//!
//! Every line is read strictly: an unknown field, or a value no agent
//! writes (a nice value past 19, a CPU past the last, a task id that is not
//! one), is an error naming the file, the line and the field, and the file
//! is not used. It decides which processes a restarted agent steers and
//! what they get back, so a hand-edited or damaged one must not be half
//! believed.
//!
//! A restarted agent re-adopts each process whose pid still names the
//! process written here (the same pidfs inode), and gives it back, when it
//! lets it go, what it ran under before the first agent took it.

use super::protocol::check_function_name;
use super::target::Before;
use super::tokens::CLIENT;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The format's version, the journal's first line; a journal of another
/// version is not read. Version 1 named a process by its start time
/// (`/proc/PID/stat`), version 2 by its pidfs inode.
const VERSION: u32 = 2;

/// Lines past which the journal is rewritten, if it also holds four times
/// as many lines as processes.
const COMPACT_AFTER: usize = 4096;

/// The highest pid a Linux kernel hands out (`PID_MAX_LIMIT` on 64-bit).
const PID_MAX_LIMIT: libc::pid_t = 1 << 22;

/// One steered process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Its pid.
    pub pid: libc::pid_t,
    /// Its pidfs inode (`fstat` of a pidfd): no other process of this boot
    /// has it, so it tells a reused pid.
    pub inode: u64,
    /// The function it runs.
    pub function: String,
    /// Its task id.
    pub task: u64,
    /// The effective uid of the client that handed it over.
    pub uid: u32,
    /// What to give back.
    pub before: Before,
}

impl Entry {
    /// Whether every field holds a value the agent could have written; if
    /// not, the field and why.
    fn check(&self) -> Result<(), (&'static str, String)> {
        if !(2..=PID_MAX_LIMIT).contains(&self.pid) {
            return Err((
                "pid",
                format!(
                    "{} is not a pid that may be handed over (2 to {PID_MAX_LIMIT})",
                    self.pid
                ),
            ));
        }
        if self.inode == 0 {
            return Err(("inode", "0 is no pidfs inode".into()));
        }
        check_function_name(&self.function).map_err(|why| ("function", why))?;
        // Tasks are epoll tokens below the clients' bit.
        if self.task >= CLIENT {
            return Err((
                "task",
                format!("{} is past the last task id ({})", self.task, CLIENT - 1),
            ));
        }
        if self.uid == u32::MAX {
            return Err(("uid", format!("{} is no uid", self.uid)));
        }
        self.before.check()
    }
}

/// The first line, read leniently for its version alone, so that a file of
/// another version is reported as such whatever else it holds.
#[derive(Deserialize)]
struct Version {
    version: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    version: u32,
}

/// One line after the header.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Line {
    /// A process handed over.
    Add(Entry),
    /// The task that ended.
    Remove(u64),
}

/// Why a state file was not read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Reading it failed.
    #[error("reading {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error (not a `source`: the message holds it).
        error: io::Error,
    },
    /// Someone else could have written it: trusting it would let them pick
    /// the processes the agent steers.
    #[error(
        "{path} is not the agent's own (owner uid {owner}, mode {mode:o}): remove it or start the agent as its owner"
    )]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// It was written by an agent whose format this one does not read.
    #[error(
        "{path} is a faasched agent state file of version {version}, and this agent reads version {VERSION} only: remove it to start afresh (the processes it lists keep the attributes the agent that wrote it gave them)"
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// Its version.
        version: u32,
    },
    /// It is not a state file of this version.
    #[error("{path} is not a faasched agent state file (version {VERSION}): {why}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A line holds a value out of range.
    #[error(
        "{path}, line {line}: field `{field}`: {why} (a damaged or hand-edited state file: remove it to start afresh)"
    )]
    Field {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The field, as the file names it (`before.nice`).
        field: &'static str,
        /// What is wrong with its value.
        why: String,
    },
}

/// serde_json's message without the position it adds (" at line 1 column
/// 9", of the one line parsed: misleading beside the file's line).
fn message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    match full.strip_suffix(&at) {
        Some(m) => format!("{m} (column {})", e.column()),
        None => full,
    }
}

/// The state file.
#[derive(Debug)]
pub struct StateFile {
    path: PathBuf,
    /// Open for appending, once [`StateFile::rewrite`] made it.
    journal: Option<fs::File>,
    /// Lines in the journal.
    lines: usize,
}

impl StateFile {
    /// The state file of the agent listening on `socket`: beside it, with the
    /// extension `state` (`agent.sock` → `agent.state`).
    pub fn beside(socket: &Path) -> StateFile {
        StateFile {
            path: socket.with_extension("state"),
            journal: None,
            lines: 0,
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The processes the journal holds (none if there is no file). The file
    /// must belong to this process's effective user and be writable by no
    /// one else.
    pub fn load(&self) -> Result<Vec<Entry>, StateError> {
        let path = &self.path;
        let read = |error| StateError::Read {
            path: path.clone(),
            error,
        };
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(read(e)),
        };
        let me = fs::metadata("/proc/self").map_err(read)?.uid();
        let mode = meta.mode() & 0o7777;
        if !meta.is_file() || meta.uid() != me || mode & 0o022 != 0 {
            return Err(StateError::Untrusted {
                path: path.clone(),
                owner: meta.uid(),
                mode,
            });
        }
        let text = fs::read_to_string(path).map_err(read)?;
        let malformed = |why: String| StateError::Malformed {
            path: path.clone(),
            why,
        };
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        let version: Version = serde_json::from_str(first)
            .map_err(|e| malformed(format!("line 1: {}", message(&e))))?;
        if version.version != VERSION {
            return Err(StateError::Version {
                path: path.clone(),
                version: version.version,
            });
        }
        serde_json::from_str::<Header>(first)
            .map_err(|e| malformed(format!("line 1: {}", message(&e))))?;
        // Each line is written whole, newline included, in one write: only
        // the last line of a file that does not end in a newline can have
        // been cut short by a crash, and only an incomplete value is one.
        let torn = !text.ends_with('\n');
        let mut entries: Vec<Entry> = Vec::new();
        let mut lines = lines.enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let number = i + 2;
            match serde_json::from_str(line) {
                Ok(Line::Add(e)) => {
                    e.check().map_err(|(field, why)| StateError::Field {
                        path: path.clone(),
                        line: number,
                        field,
                        why,
                    })?;
                    entries.push(e)
                }
                Ok(Line::Remove(task)) => entries.retain(|e| e.task != task),
                Err(e) if torn && e.is_eof() && lines.peek().is_none() => {}
                Err(e) => return Err(malformed(format!("line {number}: {}", message(&e)))),
            }
        }
        Ok(entries)
    }

    /// Replaces the journal with one holding `entries` (atomically; mode
    /// 0600), and keeps it open for appending.
    pub fn rewrite<'a>(&mut self, entries: impl IntoIterator<Item = &'a Entry>) -> io::Result<()> {
        self.journal = None;
        let mut text = line(&Header { version: VERSION })?;
        self.lines = 1;
        for e in entries {
            text.extend(line(&Line::Add(e.clone()))?);
            self.lines += 1;
        }
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        // Never through a link someone put there.
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        out.write_all(&text)?;
        drop(out);
        fs::rename(&tmp, &self.path)?;
        self.journal = Some(fs::OpenOptions::new().append(true).open(&self.path)?);
        Ok(())
    }

    /// Notes a process handed over. Before the first
    /// [`StateFile::rewrite`] (the agent re-adopting what the file listed,
    /// at its start) nothing is written: that rewrite lists every entry.
    pub fn add(&mut self, entry: &Entry) -> io::Result<()> {
        if self.lines == 0 {
            return Ok(());
        }
        self.append(&Line::Add(entry.clone()))
    }

    /// Notes that `task` ended; rewrites the journal from `live` (the
    /// processes steered now) once it has grown long.
    pub fn remove<'a>(
        &mut self,
        task: u64,
        live: impl ExactSizeIterator<Item = &'a Entry>,
    ) -> io::Result<()> {
        if self.lines > COMPACT_AFTER.max(4 * live.len()) {
            return self.rewrite(live);
        }
        self.append(&Line::Remove(task))
    }

    fn append(&mut self, l: &Line) -> io::Result<()> {
        let journal = self
            .journal
            .as_mut()
            .ok_or_else(|| io::Error::other("the journal is not open"))?;
        // One write: appended whole, or (at a crash) cut short at the end.
        journal.write_all(&line(l)?)?;
        self.lines += 1;
        Ok(())
    }

    /// Removes the file (nothing is steered any more).
    pub fn delete(&mut self) -> io::Result<()> {
        self.journal = None;
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// `value` as a JSON line.
fn line(value: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entry(pid: libc::pid_t, task: u64) -> Entry {
        Entry {
            pid,
            inode: 99,
            function: "resize".into(),
            task,
            uid: 1000,
            before: Before {
                policy: 0,
                nice: 2,
                reset_on_fork: false,
                cpus: vec![0, 1],
                rt_time_us: Some([u64::MAX, u64::MAX]),
            },
        }
    }

    #[test]
    fn adds_before_the_first_rewrite_wait_for_it_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = StateFile::beside(&dir.path().join("agent.sock"));
        // Re-adopting at the start: the rewrite after lists them all.
        state.add(&entry(10, 1)).unwrap();
        assert!(!state.path().exists());
        state.rewrite(&[entry(10, 1)]).unwrap();
        assert_eq!(state.load().unwrap(), vec![entry(10, 1)]);
        // A failed rewrite leaves no journal: later adds say so.
        let elsewhere = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("agent.state.tmp")).unwrap();
        assert!(state.rewrite(&[]).is_err());
        assert!(!elsewhere.exists(), "wrote through a link");
        assert!(state.add(&entry(11, 2)).is_err());
    }

    #[test]
    fn replays_the_journal_and_compacts_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = StateFile::beside(&dir.path().join("agent.sock"));
        assert_eq!(state.path(), dir.path().join("agent.state"));
        assert_eq!(state.load().unwrap(), Vec::new());
        state.rewrite(&[entry(10, 1)]).unwrap();
        let mode = fs::metadata(state.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        state.add(&entry(11, 2)).unwrap();
        state.add(&entry(12, 3)).unwrap();
        state
            .remove(1, [entry(11, 2), entry(12, 3)].iter())
            .unwrap();
        assert_eq!(state.load().unwrap(), vec![entry(11, 2), entry(12, 3)]);
        assert_eq!(state.lines, 5);
        // A line cut short at the end is a crash mid-write: ignored.
        let mut torn = fs::read_to_string(state.path()).unwrap();
        torn.push_str("{\"add\":{\"pid\":1");
        fs::write(state.path(), &torn).unwrap();
        assert_eq!(state.load().unwrap().len(), 2);
        // Long journals are rewritten from the live entries.
        state.rewrite(&[]).unwrap();
        state.lines = COMPACT_AFTER + 1;
        let live = [entry(12, 3)];
        state.remove(2, live.iter()).unwrap();
        assert_eq!(state.lines, 2);
        assert_eq!(state.load().unwrap(), live);
        state.delete().unwrap();
        state.delete().unwrap();
        assert_eq!(state.load().unwrap(), Vec::new());
    }

    #[test]
    fn refuses_a_file_others_could_write_another_version_or_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = StateFile::beside(&dir.path().join("agent.sock"));
        state.rewrite(&[entry(10, 1)]).unwrap();
        fs::set_permissions(state.path(), fs::Permissions::from_mode(0o666)).unwrap();
        let err = state.load().unwrap_err();
        assert!(
            matches!(err, StateError::Untrusted { mode: 0o666, .. }),
            "{err}"
        );
        fs::set_permissions(state.path(), fs::Permissions::from_mode(0o600)).unwrap();
        // Version 1 named processes by their start time: refused, saying
        // what to do.
        fs::write(state.path(), "{\"version\":1}\n").unwrap();
        let err = state.load().unwrap_err();
        assert!(
            matches!(err, StateError::Version { version: 1, .. })
                && err.to_string().contains("remove it"),
            "{err}"
        );
        fs::write(state.path(), "{\"version\":2}\nnonsense\n{\"remove\":1}\n").unwrap();
        let err = state.load().unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }

    /// A state file of a header, `entry(10, 1)` and `bad`, with `end` after.
    fn with_line(state: &StateFile, bad: &serde_json::Value, end: &str) {
        let text = format!(
            "{{\"version\":{VERSION}}}\n{}{bad}{end}",
            String::from_utf8(line(&Line::Add(entry(10, 1))).unwrap()).unwrap()
        );
        fs::write(state.path(), text).unwrap();
        fs::set_permissions(state.path(), fs::Permissions::from_mode(0o600)).unwrap();
    }

    /// `{"add":ENTRY}` for `entry(11, 2)` with `field` (a/b for a nested
    /// one) set to `value`.
    fn add_with(field: &str, value: serde_json::Value) -> serde_json::Value {
        let mut add = serde_json::to_value(Line::Add(entry(11, 2))).unwrap();
        let mut at = &mut add["add"];
        for part in field.split('.') {
            at = &mut at[part];
        }
        *at = value;
        add
    }

    #[test]
    fn a_value_out_of_range_is_named_with_its_file_line_and_field() {
        use serde_json::json;
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::beside(&dir.path().join("agent.sock"));
        let cases = [
            ("pid", json!(1)),
            ("pid", json!((1 << 22) + 1)),
            ("inode", json!(0)),
            ("function", json!("")),
            ("function", json!("a\nb")),
            ("task", json!(1u64 << 62)),
            ("uid", json!(u32::MAX)),
            ("before.policy", json!(4)),
            ("before.nice", json!(20)),
            ("before.nice", json!(-21)),
            ("before.cpus", json!([])),
            ("before.cpus", json!([faasched_model::MAX_CPUS])),
            ("before.cpus", json!([1, 1])),
            ("before.rt_time_us", json!([5, 4])),
        ];
        for (field, value) in cases {
            // Last or not, complete and ending in a newline or not: refused.
            for end in ["\n", "", "\n{\"remove\":1}\n"] {
                with_line(&state, &add_with(field, value.clone()), end);
                let err = state.load().unwrap_err();
                let shown = err.to_string();
                assert!(
                    matches!(&err, StateError::Field { line: 3, field: f, .. } if *f == field)
                        && shown.contains(&state.path().display().to_string())
                        && shown.contains(&format!("line 3: field `{field}`")),
                    "{field} = {value}: {shown}"
                );
            }
        }
        // In range: read.
        with_line(&state, &add_with("before.nice", json!(-20)), "\n");
        assert_eq!(state.load().unwrap().len(), 2);
    }

    #[test]
    fn an_unknown_field_is_refused_naming_it() {
        use serde_json::json;
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::beside(&dir.path().join("agent.sock"));
        for (bad, field) in [
            (add_with("extra", json!(1)), "extra"),
            (add_with("before.slice_us", json!(3000)), "slice_us"),
        ] {
            for end in ["\n", ""] {
                with_line(&state, &bad, end);
                let err = state.load().unwrap_err().to_string();
                assert!(
                    err.contains("line 3: unknown field") && err.contains(&format!("`{field}`")),
                    "{err}"
                );
            }
        }
        fs::write(state.path(), "{\"version\":2,\"writer\":\"me\"}\n").unwrap();
        let err = state.load().unwrap_err().to_string();
        assert!(err.contains("line 1: unknown field `writer`"), "{err}");
        // Another version is reported as such, whatever else its header holds.
        fs::write(state.path(), "{\"version\":3,\"writer\":\"me\"}\n").unwrap();
        let err = state.load().unwrap_err();
        assert!(
            matches!(err, StateError::Version { version: 3, .. }),
            "{err}"
        );
    }
}
