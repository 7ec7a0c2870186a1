//! The agent's memory across its own restart: the processes it steers, in a
//! JSON file beside its socket, rewritten whole (a temporary file renamed
//! over it, so a reader never sees half of one) each time the set changes.
//!
//! A restarted agent re-adopts each process whose pid still has the start
//! time written here, and gives it back, when it lets it go, what it ran
//! under before the first agent took it.

use super::target::Before;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The file format's version; a file of another version is not read.
const VERSION: u32 = 1;

/// One steered process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its pid.
    pub pid: libc::pid_t,
    /// Its start time (`/proc/PID/stat` field 22): tells a reused pid.
    pub starttime: u64,
    /// The function it runs.
    pub function: String,
    /// Its task id.
    pub task: u64,
    /// The effective uid of the client that handed it over.
    pub uid: u32,
    /// What to give back.
    pub before: Before,
}

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    processes: Vec<Entry>,
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
    /// It is not a state file of this version.
    #[error("{path} is not a faasched agent state file (version {VERSION}): {why}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// The state file.
#[derive(Clone, Debug)]
pub struct StateFile {
    path: PathBuf,
}

impl StateFile {
    /// The state file of the agent listening on `socket`: beside it, with the
    /// extension `state` (`agent.sock` → `agent.state`).
    pub fn beside(socket: &Path) -> StateFile {
        StateFile {
            path: socket.with_extension("state"),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries written last (none if there is no file). The file must
    /// belong to this process's effective user and be writable by no one
    /// else.
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
        let file: File = serde_json::from_str(&text).map_err(|e| StateError::Malformed {
            path: path.clone(),
            why: e.to_string(),
        })?;
        if file.version != VERSION {
            return Err(StateError::Malformed {
                path: path.clone(),
                why: format!("version {}", file.version),
            });
        }
        Ok(file.processes)
    }

    /// Replaces the file with `entries`, atomically (mode 0600).
    pub fn save<'a>(&self, entries: impl IntoIterator<Item = &'a Entry>) -> io::Result<()> {
        let file = File {
            version: VERSION,
            processes: entries.into_iter().cloned().collect(),
        };
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        out.write_all(&serde_json::to_vec(&file).map_err(io::Error::other)?)?;
        drop(out);
        fs::rename(&tmp, &self.path)
    }

    /// Removes the file (nothing is steered any more).
    pub fn remove(&self) -> io::Result<()> {
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entry(pid: libc::pid_t) -> Entry {
        Entry {
            pid,
            starttime: 99,
            function: "resize".into(),
            task: 7,
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
    fn round_trips_and_is_gone_once_removed() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::beside(&dir.path().join("agent.sock"));
        assert_eq!(state.path(), dir.path().join("agent.state"));
        assert_eq!(state.load().unwrap(), Vec::new());
        let entries = vec![entry(10), entry(11)];
        state.save(&entries).unwrap();
        assert_eq!(state.load().unwrap(), entries);
        let mode = fs::metadata(state.path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        state.remove().unwrap();
        state.remove().unwrap();
        assert_eq!(state.load().unwrap(), Vec::new());
    }

    #[test]
    fn refuses_a_file_others_could_write_or_a_stranger() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::beside(&dir.path().join("agent.sock"));
        state.save(&[entry(10)]).unwrap();
        fs::set_permissions(state.path(), fs::Permissions::from_mode(0o666)).unwrap();
        let err = state.load().unwrap_err();
        assert!(
            matches!(err, StateError::Untrusted { mode: 0o666, .. }),
            "{err}"
        );
        fs::write(state.path(), "{\"version\":9,\"processes\":[]}").unwrap();
        fs::set_permissions(state.path(), fs::Permissions::from_mode(0o600)).unwrap();
        let err = state.load().unwrap_err().to_string();
        assert!(err.contains("version 9"), "{err}");
    }
}
