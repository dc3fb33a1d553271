//! Ending and reaping a run's processes: its process group, every process of its uid, and the leader's status
//! and CPU time.

use std::io;

/// Kills every process that runs as `uid`, including those that left the sandbox's process group (`setsid`).
///
/// A forked helper becomes `uid` and calls `kill(-1, SIGKILL)`, which reaches exactly the processes that `uid`
/// may signal: those of the same uid. This is only sound because every sandbox run gets a uid of its own, and
/// it must never run as root: `kill(-1)` as root would kill the whole machine. The helper therefore checks its
/// identity after switching and refuses otherwise.
pub(crate) fn kill_all_of_uid(uid: libc::uid_t, gid: libc::gid_t) {
    if uid == 0 {
        return;
    }
    // SAFETY: the child makes raw system calls only and `_exit`s; `kill(-1)` is reached only after the switch to
    // the (non-zero) uid was verified.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            let switched = libc::setgroups(0, std::ptr::null()) == 0
                && libc::setresgid(gid, gid, gid) == 0
                && libc::setresuid(uid, uid, uid) == 0;
            let (mut r, mut e, mut s) = (0, 0, 0);
            let verified = libc::getresuid(&mut r, &mut e, &mut s) == 0
                && r == uid
                && e == uid
                && s == uid
                && uid != 0;
            if switched && verified {
                libc::kill(-1, libc::SIGKILL);
                libc::_exit(0);
            }
            libc::_exit(1);
        }
        if pid > 0 {
            wait_exit_code(pid);
        }
    }
}

/// Waits for `pid` and returns its exit code (None when it was killed by a signal or could not be waited for).
pub(super) fn wait_exit_code(pid: libc::pid_t) -> Option<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` is a valid out-pointer.
        let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
        if ret == pid {
            return libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        }
        if ret == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}

/// Resource usage and status of a terminated child, reaped with `wait4`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reaped {
    pub status: libc::c_int,
    pub cpu_micros: u64,
}

/// Returns true when `pid` has terminated, *without* reaping it: a zombie keeps its pid and process-group id
/// reserved, so the group can still be killed without the risk of hitting a recycled pid.
pub(crate) fn has_exited(pid: libc::pid_t) -> io::Result<bool> {
    // SAFETY: `info` is a zeroed siginfo_t written by the kernel.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let ret = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if ret == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(info.si_pid() != 0)
    }
}

/// Reaps `pid` (blocking) and returns its status and CPU time (user + system, its waited-for children included).
pub(crate) fn reap(pid: libc::pid_t) -> io::Result<Reaped> {
    let mut status = 0;
    // SAFETY: `usage` is a zeroed rusage written by the kernel; we wait for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: see above.
        let ret = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if ret == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok(Reaped {
        status,
        cpu_micros: micros(usage.ru_utime) + micros(usage.ru_stime),
    })
}

/// Sends SIGKILL to the process group `pgid`. ESRCH (nobody left) is fine.
pub(crate) fn kill_group(pgid: libc::pid_t) {
    if pgid > 1 {
        // SAFETY: plain system call; pgid > 1 so this never means "every process" or "my own group".
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}
