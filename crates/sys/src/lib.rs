//! The Linux calls faasched's live runtime needs that std does not wrap.
//!
//! Each public module is safe code over [rustix], or over [nix] where
//! rustix has no wrapper (signalfd, CPU clocks, `getrusage`, `sysconf`)
//! or none that is sound for every answer the kernel may give (`SO_PEERCRED`:
//! see `peercred`). What no maintained crate offers is written by hand, each
//! in a small private module of its own, the only places where `unsafe` is
//! allowed (the workspace denies it everywhere else):
//!
//! - `raw`: system calls whose error comes back in a register, for a child
//!   that shares the launcher's memory (and so its `errno`);
//! - `sched_attr`: `sched_setattr` and `sched_getattr`;
//! - `pidfd_info`: the `PIDFD_GET_INFO` ioctl;
//! - `launch`: the launcher's fast spawn (`clone` with `CLONE_VM`) and a
//!   child's request to die with its parent;
//! - `wait4`: reaping a child with its resource usage;
//! - `prlimit`: reading another process's resource limit;
//! - `credmsg`: a datagram received with its sender's credentials, and the
//!   answer to its address;
//! - `disposition`: setting a signal's disposition to its default and back;
//! - `rt_timer`: a POSIX timer that sends a real-time signal with a value.

pub mod clock;
pub mod cputimer;
pub mod dgram;
pub mod limits;
pub mod peercred;
pub mod pidfd;
pub mod poll;
pub mod process;
pub mod sched;
pub mod signals;
pub mod sockopt;

mod credmsg;
mod disposition;
mod launch;
mod pidfd_info;
mod prlimit;
mod raw;
mod rt_timer;
mod sched_attr;
mod wait4;

/// rustix's error as std's (the same errno).
fn io(e: rustix::io::Errno) -> std::io::Error {
    e.into()
}

/// nix's error as std's (the same errno).
fn nix_io(e: nix::Error) -> std::io::Error {
    e.into()
}

/// `raw` as rustix's pid: `None` for 0, which the calls read as the caller;
/// an error for a negative one (a process group, which none of them take).
fn pid(raw: libc::pid_t) -> std::io::Result<Option<rustix::process::Pid>> {
    if raw < 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("pid {raw} is negative"),
        ));
    }
    Ok(rustix::process::Pid::from_raw(raw))
}
