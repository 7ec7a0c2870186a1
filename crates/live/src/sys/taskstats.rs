//! The kernel's per-task accounting over generic netlink (taskstats,
//! `CONFIG_TASKSTATS`): a task's CPU time, run-queue wait, turns on a CPU,
//! context switches and elapsed time, on request for a live task, and as a
//! message the kernel sends by itself when a task on chosen CPUs exits.
//!
//! The agent reads exits this way (docs/LIVE.md, "Overhead"): the message
//! holds the final counts, so nothing has to be read from the zombie before
//! its parent reaps it, and messages wait in the socket until the agent
//! next looks, so an exit costs no wake-up of its own. Its counts are
//! schedstat's (`sum_exec_runtime`, `run_delay`, `pcount`: the kernel's
//! `delayacct_add_tsk` copies them whether or not delay accounting is on),
//! plus `nvcsw`/`nivcsw`, which schedstat lacks, and the elapsed time since
//! the task started, which dates the exit to the microsecond however late
//! the message is read.
//!
//! Requests and registration need CAP_NET_ADMIN, in the initial user and
//! pid namespaces.

use faasched_model::Nanos;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

const NETLINK_GENERIC: libc::c_int = 16;
const GENL_ID_CTRL: u16 = 16;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_NEW: u8 = 2;
const TASKSTATS_CMD_ATTR_PID: u16 = 1;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_TYPE_PID: u16 = 1;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
/// Nested and byte-order flags of an attribute's type.
const NLA_TYPE_MASK: u16 = 0x3fff;
const NLMSG_HDRLEN: usize = 16;
const GENL_HDRLEN: usize = 4;

/// Offsets in `struct taskstats` (linux/taskstats.h; fields are only ever
/// appended, so these hold from version 4 on).
mod offset {
    pub const VERSION: usize = 0;
    pub const CPU_COUNT: usize = 16;
    pub const CPU_DELAY_TOTAL: usize = 24;
    pub const CPU_RUN_VIRTUAL_TOTAL: usize = 72;
    pub const AC_ETIME: usize = 144;
    pub const NVCSW: usize = 272;
    pub const NIVCSW: usize = 280;
    /// The struct is at least this long from version 4 on.
    pub const END: usize = 288;
}

/// What taskstats says of one task (a thread: a process's is its main
/// thread's, as in `/proc/PID/schedstat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// The task.
    pub pid: libc::pid_t,
    /// Time on a CPU (`sum_exec_runtime`), ns.
    pub cpu: Nanos,
    /// Time runnable but waiting for a CPU (`run_delay`), ns.
    pub wait: Nanos,
    /// Turns on a CPU (`pcount`).
    pub turns: u64,
    /// Voluntary context switches.
    pub voluntary: u64,
    /// Involuntary context switches.
    pub involuntary: u64,
    /// Time since the task started, µs resolution, in ns.
    pub elapsed: Nanos,
}

/// A generic netlink socket talking to the taskstats family.
#[derive(Debug)]
pub struct Taskstats {
    fd: OwnedFd,
    family: u16,
    seq: u32,
}

/// What a [`Taskstats::exits`] call found besides the exits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// The socket overflowed since the last call: some exits were lost.
    pub overrun: bool,
}

impl Taskstats {
    /// A socket for taskstats requests. Fails if the kernel has no
    /// taskstats (ENOENT from the family look-up).
    pub fn open() -> io::Result<Taskstats> {
        // SAFETY: socket takes three integers.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor that we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: an all-zero sockaddr_nl is valid (the kernel picks the
        // port id).
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `addr` is a sockaddr_nl of the size passed.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_nl).cast(),
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ts = Taskstats {
            fd,
            family: GENL_ID_CTRL,
            seq: 0,
        };
        let reply = ts.call(
            GENL_ID_CTRL,
            CTRL_CMD_GETFAMILY,
            CTRL_ATTR_FAMILY_NAME,
            b"TASKSTATS\0",
        )?;
        ts.family = attrs(&reply)
            .find(|(t, _)| *t == CTRL_ATTR_FAMILY_ID)
            .and_then(|(_, v)| Some(u16::from_ne_bytes(v.get(..2)?.try_into().ok()?)))
            .ok_or_else(|| malformed("a family reply without its id"))?;
        Ok(ts)
    }

    /// The accounting of live task `pid` now.
    pub fn task(&mut self, pid: libc::pid_t) -> io::Result<Account> {
        let reply = self.call(
            self.family,
            TASKSTATS_CMD_GET,
            TASKSTATS_CMD_ATTR_PID,
            &(pid as u32).to_ne_bytes(),
        )?;
        accounts(&reply)
            .next()
            .ok_or_else(|| malformed("a taskstats reply without stats"))
    }

    /// Turns this socket into a listener for the exits of tasks on the
    /// CPUs of `cpulist` (the kernel's list format, `0-3,8`): the kernel
    /// queues one message per exit, read with [`Taskstats::exits`]. With a
    /// receive buffer of `buffer` bytes (more than the system's maximum
    /// only with CAP_NET_ADMIN), so that a burst of exits between two reads
    /// is not lost.
    pub fn listen(mut self, cpulist: &str, buffer: usize) -> io::Result<Taskstats> {
        let mask = format!("{cpulist}\0");
        self.call(
            self.family,
            TASKSTATS_CMD_GET,
            TASKSTATS_CMD_ATTR_REGISTER_CPUMASK,
            mask.as_bytes(),
        )?;
        let size = buffer.min(i32::MAX as usize) as libc::c_int;
        // SAFETY: an int option of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&size as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            // Without the privilege, the most the system allows.
            // SAFETY: as above.
            unsafe {
                libc::setsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUF,
                    (&size as *const libc::c_int).cast(),
                    size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
        }
        Ok(self)
    }

    /// Appends to `out` every exit queued since the last call (each thread's
    /// own, `TASKSTATS_TYPE_AGGR_PID`), without waiting.
    pub fn exits(&mut self, out: &mut Vec<Account>) -> io::Result<Drained> {
        let mut drained = Drained::default();
        let mut buf = [0u8; 8192];
        loop {
            let n = match self.recv(&mut buf, libc::MSG_DONTWAIT) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(drained),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    drained.overrun = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            for msg in messages(&buf[..n]) {
                if let Message::Family(body) = msg?
                    && body.first() == Some(&TASKSTATS_CMD_NEW)
                {
                    out.extend(accounts(body));
                }
            }
        }
    }

    /// Sends a request with one attribute and returns the reply's generic
    /// netlink body (command, version, attributes), after its
    /// acknowledgement if the reply is only that.
    fn call(&mut self, family: u16, cmd: u8, attr: u16, value: &[u8]) -> io::Result<Vec<u8>> {
        self.seq = self.seq.wrapping_add(1);
        let request = request(
            family,
            NLM_F_REQUEST | NLM_F_ACK,
            self.seq,
            cmd,
            attr,
            value,
        );
        // SAFETY: `request` is readable for its length.
        let sent = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                request.as_ptr().cast(),
                request.len(),
                0,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut body = None;
        let mut buf = vec![0u8; 16384];
        // The reply (if any), then the acknowledgement.
        loop {
            let n = self.recv(&mut buf, 0)?;
            for msg in messages(&buf[..n]) {
                match msg? {
                    Message::Family(b) => body = Some(b.to_vec()),
                    Message::Ack(0) => return Ok(body.unwrap_or_default()),
                    Message::Ack(errno) => return Err(io::Error::from_raw_os_error(errno)),
                }
            }
        }
    }

    fn recv(&self, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags | libc::MSG_TRUNC,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        if n > buf.len() {
            return Err(malformed("a netlink message larger than its buffer"));
        }
        Ok(n)
    }
}

impl AsFd for Taskstats {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn malformed(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("taskstats: {what}"))
}

/// A netlink request: header, generic netlink header, one attribute.
fn request(family: u16, flags: u16, seq: u32, cmd: u8, attr: u16, value: &[u8]) -> Vec<u8> {
    let attr_len = 4 + value.len();
    let len = NLMSG_HDRLEN + GENL_HDRLEN + align(attr_len);
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&family.to_ne_bytes());
    m.extend_from_slice(&flags.to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    m.extend_from_slice(&[cmd, 1, 0, 0]); // command, version 1, reserved
    m.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    m.extend_from_slice(&attr.to_ne_bytes());
    m.extend_from_slice(value);
    m.resize(len, 0);
    m
}

fn align(n: usize) -> usize {
    (n + 3) & !3
}

enum Message<'a> {
    /// A message of a family: its generic netlink body.
    Family(&'a [u8]),
    /// An acknowledgement: 0, or the errno of a refusal.
    Ack(i32),
}

/// The netlink messages of one datagram.
fn messages(mut buf: &[u8]) -> impl Iterator<Item = io::Result<Message<'_>>> {
    std::iter::from_fn(move || {
        if buf.len() < NLMSG_HDRLEN {
            return None;
        }
        let len = u32::from_ne_bytes(buf[0..4].try_into().ok()?) as usize;
        let kind = u16::from_ne_bytes(buf[4..6].try_into().ok()?);
        if len < NLMSG_HDRLEN || len > buf.len() {
            buf = &[];
            return Some(Err(malformed("a truncated netlink message")));
        }
        let body = &buf[NLMSG_HDRLEN..len];
        buf = buf.get(align(len)..).unwrap_or(&[]);
        Some(match kind {
            NLMSG_ERROR => body
                .get(..4)
                .map(|e| Message::Ack(-i32::from_ne_bytes(e.try_into().expect("4 bytes"))))
                .ok_or_else(|| malformed("a short netlink error")),
            _ => Ok(Message::Family(body)),
        })
    })
}

/// The attributes (type without flags, value) of a generic netlink body,
/// which starts with the generic header.
fn attrs(body: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    nested(body.get(GENL_HDRLEN..).unwrap_or(&[]))
}

/// The attributes of a nested attribute's value.
fn nested(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = u16::from_ne_bytes(buf.get(0..2)?.try_into().ok()?) as usize;
        let kind = u16::from_ne_bytes(buf.get(2..4)?.try_into().ok()?) & NLA_TYPE_MASK;
        let value = buf.get(4..len)?;
        buf = buf.get(align(len)..).unwrap_or(&[]);
        Some((kind, value))
    })
}

/// The per-task accounts (`AGGR_PID`: pid and stats) of a taskstats body.
fn accounts(body: &[u8]) -> impl Iterator<Item = Account> + '_ {
    attrs(body)
        .filter(|(t, _)| *t == TASKSTATS_TYPE_AGGR_PID)
        .filter_map(|(_, v)| {
            let mut pid = None;
            let mut stats = None;
            for (t, v) in nested(v) {
                match t {
                    TASKSTATS_TYPE_PID => {
                        pid = Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
                    }
                    TASKSTATS_TYPE_STATS => stats = Some(v),
                    _ => {}
                }
            }
            account(pid? as libc::pid_t, stats?)
        })
}

fn account(pid: libc::pid_t, stats: &[u8]) -> Option<Account> {
    if stats.len() < offset::END {
        return None;
    }
    let u64_at = |o: usize| u64::from_ne_bytes(stats[o..o + 8].try_into().expect("8 bytes"));
    let version = u16::from_ne_bytes(stats[offset::VERSION..2].try_into().ok()?);
    if version < 4 {
        return None;
    }
    Some(Account {
        pid,
        cpu: u64_at(offset::CPU_RUN_VIRTUAL_TOTAL),
        wait: u64_at(offset::CPU_DELAY_TOTAL),
        turns: u64_at(offset::CPU_COUNT),
        voluntary: u64_at(offset::NVCSW),
        involuntary: u64_at(offset::NIVCSW),
        elapsed: u64_at(offset::AC_ETIME) * 1000,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A taskstats body as the kernel sends one: generic header, then an
    /// `AGGR_PID` holding a pid and a stats struct.
    fn body(pid: u32, stats: &[u8]) -> Vec<u8> {
        let attr = |t: u16, v: &[u8]| {
            let mut a = ((4 + v.len()) as u16).to_ne_bytes().to_vec();
            a.extend_from_slice(&t.to_ne_bytes());
            a.extend_from_slice(v);
            a.resize(align(a.len()), 0);
            a
        };
        let mut inner = attr(TASKSTATS_TYPE_PID, &pid.to_ne_bytes());
        inner.extend(attr(TASKSTATS_TYPE_STATS, stats));
        let mut b = vec![TASKSTATS_CMD_NEW, 1, 0, 0];
        b.extend(attr(TASKSTATS_TYPE_AGGR_PID | 0x8000, &inner));
        b
    }

    fn stats(version: u16) -> Vec<u8> {
        let mut s = vec![0u8; 560];
        s[0..2].copy_from_slice(&version.to_ne_bytes());
        let mut put = |o: usize, v: u64| s[o..o + 8].copy_from_slice(&v.to_ne_bytes());
        put(offset::CPU_COUNT, 7);
        put(offset::CPU_DELAY_TOTAL, 340);
        put(offset::CPU_RUN_VIRTUAL_TOTAL, 1200);
        put(offset::AC_ETIME, 55);
        put(offset::NVCSW, 3);
        put(offset::NIVCSW, 4);
        s
    }

    #[test]
    fn reads_an_exit_message() {
        let b = body(4242, &stats(16));
        let got: Vec<Account> = accounts(&b).collect();
        assert_eq!(
            got,
            [Account {
                pid: 4242,
                cpu: 1200,
                wait: 340,
                turns: 7,
                voluntary: 3,
                involuntary: 4,
                elapsed: 55_000,
            }]
        );
        // Too old or too short: nothing rather than wrong numbers.
        assert_eq!(accounts(&body(1, &stats(3))).count(), 0);
        assert_eq!(accounts(&body(1, &stats(16)[..200])).count(), 0);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let b = body(4242, &stats(16));
        for cut in 0..b.len() {
            let _ = accounts(&b[..cut]).count();
            let _: Vec<_> = messages(&b[..cut]).collect();
        }
        let mut x = 0x9e37_79b9_u32;
        for _ in 0..2000 {
            let bytes: Vec<u8> = (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let _ = accounts(&bytes).count();
            let _: Vec<_> = messages(&bytes).collect();
        }
    }

    #[test]
    fn requests_are_aligned_netlink_messages() {
        let r = request(
            31,
            NLM_F_REQUEST,
            9,
            TASKSTATS_CMD_GET,
            1,
            &7u32.to_ne_bytes(),
        );
        assert_eq!(r.len(), 16 + 4 + 8);
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 28);
        assert_eq!(u16::from_ne_bytes(r[4..6].try_into().unwrap()), 31);
        let name = request(16, NLM_F_REQUEST, 1, CTRL_CMD_GETFAMILY, 2, b"TASKSTATS\0");
        assert_eq!(name.len() % 4, 0);
    }

    fn privileged() -> Option<Taskstats> {
        match Taskstats::open() {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("skipped: no taskstats here ({e})");
                None
            }
        }
    }

    /// The kernel's own answer for this thread agrees with its schedstat,
    /// and a child's exit arrives with the child's counts.
    #[test]
    fn the_kernel_answers_for_a_live_task_and_reports_an_exit() {
        let Some(mut ts) = privileged() else { return };
        // SAFETY: gettid has no arguments.
        let tid = unsafe { libc::gettid() };
        let before = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        let me = match ts.task(tid) {
            Ok(a) => a,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                return eprintln!("skipped: taskstats needs CAP_NET_ADMIN");
            }
            Err(e) => panic!("{e}"),
        };
        let after = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        let cpu = |s: &str| s.split_whitespace().next().unwrap().parse::<u64>().unwrap();
        assert_eq!(me.pid, tid);
        assert!(cpu(&before) <= me.cpu && me.cpu <= cpu(&after), "{me:?}");
        assert!(me.elapsed > 0);

        let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
        let mut exits = Taskstats::open()
            .unwrap()
            .listen(possible.trim(), 1 << 20)
            .unwrap();
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        let mut child = child;
        child.wait().unwrap();
        let mut seen = Vec::new();
        exits.exits(&mut seen).unwrap();
        let exit = seen
            .iter()
            .find(|a| a.pid == pid)
            .expect("the child's exit");
        assert!(
            exit.cpu > 0 && exit.turns > 0 && exit.elapsed > 0,
            "{exit:?}"
        );
    }
}
