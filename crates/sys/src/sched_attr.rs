//! `sched_setattr` and `sched_getattr`, by hand: neither rustix nor nix
//! wraps them (std and libc declare the struct alone). The setting call is
//! raw (`crate::raw`): a child between its `clone` and its `exec` makes it,
//! and shares the launcher's `errno`.
#![allow(unsafe_code)]

use crate::raw;
use std::io;

/// The kernel's `struct sched_attr` (include/uapi/linux/sched/types.h, the
/// 56-byte version with utilisation clamps).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchedAttr {
    pub(crate) size: u32,
    pub(crate) policy: u32,
    pub(crate) flags: u64,
    pub(crate) nice: i32,
    pub(crate) priority: u32,
    pub(crate) runtime: u64,
    pub(crate) deadline: u64,
    pub(crate) period: u64,
    pub(crate) util_min: u32,
    pub(crate) util_max: u32,
}

/// The size the kernel reads and writes.
const SIZE: u32 = size_of::<SchedAttr>() as u32;

impl SchedAttr {
    /// An all-zero attribute set whose `size` is its size.
    pub(crate) fn new() -> SchedAttr {
        SchedAttr {
            size: SIZE,
            ..SchedAttr::default()
        }
    }
}

/// Applies `attr` to `pid` (0: the calling thread). Async-signal-safe and
/// leaves `errno` alone.
pub(crate) fn set(pid: libc::pid_t, attr: &SchedAttr) -> io::Result<()> {
    let at = attr as *const SchedAttr as usize;
    // SAFETY: `attr` is a valid sched_attr that lives across the call (the
    // kernel reads `attr.size` bytes, which `new` set to its size, or less
    // if a caller lowered it).
    unsafe { raw::syscall3(libc::SYS_sched_setattr, pid as usize, at, 0) }?;
    Ok(())
}

/// The attributes of `pid` (0: the calling thread).
pub(crate) fn get(pid: libc::pid_t) -> io::Result<SchedAttr> {
    let mut attr = SchedAttr::new();
    // SAFETY: `attr` is writable, lives across the call and is `SIZE`
    // bytes long, which is all the kernel writes.
    let rc = unsafe { libc::syscall(libc::SYS_sched_getattr, pid, &mut attr, SIZE, 0u32) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(attr)
}
