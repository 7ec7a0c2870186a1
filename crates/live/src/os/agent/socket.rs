//! The agent's two sockets, bound so that a stale one is replaced and a
//! live agent's is never taken over.

use super::{AgentError, system};
use crate::sys::dgram;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// A socket the agent binds: the stream socket it listens on, or the
/// datagram socket beside it. Removed when dropped, if it is still ours.
pub(super) struct Socket<S> {
    pub(super) socket: S,
    pub(super) path: PathBuf,
    pub(super) inode: (u64, u64),
}

/// The kinds of socket the agent binds.
pub(super) trait Bind: Sized {
    /// A socket of this kind bound to `path`, non-blocking.
    fn bind(path: &Path) -> io::Result<Self>;
    /// Connects to `path` as a client of this kind would: an error
    /// (`ConnectionRefused`) if no socket is bound there any more.
    fn probe(path: &Path) -> io::Result<()>;
}

impl Bind for UnixListener {
    fn bind(path: &Path) -> io::Result<Self> {
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    }

    fn probe(path: &Path) -> io::Result<()> {
        UnixStream::connect(path).map(drop)
    }
}

impl Bind for UnixDatagram {
    /// With `SO_PASSCRED`: each request carries its sender's credentials.
    fn bind(path: &Path) -> io::Result<Self> {
        dgram::bind(path)
    }

    fn probe(path: &Path) -> io::Result<()> {
        UnixDatagram::unbound()?.connect(path)
    }
}

impl<S: Bind> Socket<S> {
    /// Binds `path` (mode 0666: any user may connect, and the credentials
    /// decide what it may do), creating its directory (0755) if missing and
    /// replacing a stale socket that no agent answers on.
    pub(super) fn bind(path: &Path) -> Result<Socket<S>, AgentError> {
        let shown = path.display();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .map_err(system(format!("creating {}", dir.display())))?;
        }
        match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => match S::probe(path) {
                Ok(()) => return Err(AgentError::Running(path.to_path_buf())),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    fs::remove_file(path).map_err(system(format!("removing stale {shown}")))?
                }
                Err(e) => return Err(system(format!("checking {shown}"))(e)),
            },
            Ok(_) => return Err(AgentError::NotASocket(path.to_path_buf())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(system(format!("checking {shown}"))(e)),
        }
        let socket = S::bind(path).map_err(system(format!("binding {shown}")))?;
        let meta = fs::metadata(path).map_err(system(format!("checking {shown}")))?;
        let socket = Socket {
            socket,
            path: path.to_path_buf(),
            inode: (meta.dev(), meta.ino()),
        };
        fs::set_permissions(path, fs::Permissions::from_mode(0o666))
            .map_err(system(format!("chmod {shown}")))?;
        Ok(socket)
    }
}

impl<S> Drop for Socket<S> {
    fn drop(&mut self) {
        if fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.inode) {
            let _ = fs::remove_file(&self.path);
        }
    }
}
