//! System calls whose error comes back as their result, not through `errno`.
//!
//! A replay's child runs in the launcher's memory until its `exec` (`clone`
//! with `CLONE_VM`, `launch`), and with it the launcher's thread-local
//! storage: its `errno` is the launcher thread's. The libc wrappers store a
//! failed call's error there, and the launcher, reading its pipes until
//! they would block, stores `EAGAIN` there all the time, so a child that
//! failed to `exec` could report the launcher's error instead of its own (a
//! live test expecting ENOENT for a missing program failed under load).
//! The kernel returns the error in a register; these calls hand it over
//! from there. On architectures without the assembly here, the libc
//! wrapper is used, with the race.
//!
//! By hand: rustix's calls leave `errno` alone too, but it has no
//! `sched_setattr` nor (outside its unstable runtime layer) `execve`, and
//! no crate offers a raw system call that returns its error.
#![allow(unsafe_code)]

use std::io;

/// System call `nr` with three arguments: its non-negative result, or the
/// error the kernel returned.
///
/// # Safety
/// The arguments must be valid for call `nr` (pointers to live memory of
/// the sizes it reads or writes).
pub(crate) unsafe fn syscall3(nr: libc::c_long, a: usize, b: usize, c: usize) -> io::Result<usize> {
    let ret = unsafe { call3(nr, a, b, c) };
    // The kernel returns -4095..-1 for an error, anything else is a result.
    match ret {
        -4095..=-1 => Err(io::Error::from_raw_os_error(-ret as i32)),
        _ => Ok(ret as usize),
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn call3(nr: libc::c_long, a: usize, b: usize, c: usize) -> isize {
    let ret: isize;
    // SAFETY: the x86-64 system call convention: number in rax, arguments
    // in rdi, rsi, rdx; rcx and r11 are clobbered; the caller vouches for
    // the arguments.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

#[cfg(target_arch = "aarch64")]
unsafe fn call3(nr: libc::c_long, a: usize, b: usize, c: usize) -> isize {
    let ret: isize;
    // SAFETY: the AArch64 system call convention: number in x8, arguments
    // and result in x0..; the caller vouches for the arguments.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") nr,
            inlateout("x0") a as isize => ret,
            in("x1") b,
            in("x2") c,
            options(nostack),
        );
    }
    ret
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
unsafe fn call3(nr: libc::c_long, a: usize, b: usize, c: usize) -> isize {
    // SAFETY: as the caller vouches.
    match unsafe { libc::syscall(nr, a, b, c) } {
        -1 => {
            -(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO) as isize)
        }
        r => r as isize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_errors_come_back_as_returned() {
        // SAFETY: getpid takes nothing.
        let pid = unsafe { syscall3(libc::SYS_getpid, 0, 0, 0) }.unwrap();
        assert_eq!(pid, std::process::id() as usize);
        // close(-1) fails with EBADF.
        // SAFETY: close of an invalid descriptor touches no memory.
        let err = unsafe { syscall3(libc::SYS_close, -1i32 as usize, 0, 0) }.unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF));
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn a_failed_call_leaves_errno_alone() {
        // SAFETY: errno is this thread's; close(-1) touches no memory.
        unsafe {
            *libc::__errno_location() = libc::EINTR;
            syscall3(libc::SYS_close, -1i32 as usize, 0, 0).unwrap_err();
            assert_eq!(*libc::__errno_location(), libc::EINTR);
        }
    }
}
