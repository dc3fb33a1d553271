//! The extra fork that makes the program process 1 of its own PID namespace (in the child, async-signal-safe).

use std::io;

use super::check;

/// After `unshare(CLONE_NEWPID)` the caller itself stays outside the new namespace; its next child is the
/// namespace's process 1. So fork: the grandchild returns and goes on to `exec` the program; this process (the one
/// kt knows by pid and process group) closes every descriptor, waits, and ends the way the program ended, so kt's
/// wait, CPU accounting (its waited-for child) and signals work as without a namespace. The intermediate asks
/// for SIGKILL when kt dies, and the grandchild for SIGKILL when the intermediate dies; when process 1 dies, the
/// kernel kills the rest of the namespace.
///
/// # Safety
/// Called only from [`super::apply`], in the child.
pub(super) unsafe fn enter_pid_namespace() -> io::Result<()> {
    // SAFETY: async-signal-safe system calls only; the intermediate never returns (it `_exit`s).
    unsafe {
        let pid = libc::fork();
        if pid == -1 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            return check(libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ));
        }
        // The intermediate must not hold std's error-report pipe (spawn would wait for it) or any other pipe.
        libc::close_range(3, libc::c_uint::MAX, 0);
        let core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &core);
        let mut status = 0;
        loop {
            let ret = libc::waitpid(pid, &mut status, 0);
            if ret == pid {
                break;
            }
            if ret == -1 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status));
    }
}
