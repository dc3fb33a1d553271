//! The only `unsafe` code of kt-sandbox: what runs in the child between `fork` and `exec` (this file, with the
//! mounts in `mounts.rs` and the PID namespace's extra fork in `pid_namespace.rs`), and tiny forked helpers: the
//! capability probe (`probe.rs`) and the reaper (`reap.rs`).
//!
//! Between `fork` and `exec` in a multi-threaded parent only async-signal-safe calls are allowed: another thread
//! may have held the allocator's lock at the moment of the fork, so allocating, locking, logging or formatting
//! can deadlock the child. Everything the child needs (C strings, numbers) is therefore prepared by the parent in
//! a [`Confinement`] before the fork, and the child only issues raw system calls (through `libc`, or `nix`
//! functions that are one-line wrappers around them) and reports failure as an errno, which std sends back to
//! the parent so that `spawn` fails with that error.

use std::ffi::CString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::resource::{Resource, setrlimit};

mod mounts;
mod pid_namespace;
mod probe;
mod reap;

pub(crate) use mounts::{BindSource, MountOp};
pub(crate) use probe::{ProbeResult, identity_maps, joins_cgroup, probe};
pub(crate) use reap::{has_exited, kill_all_of_uid, kill_group, reap};

use mounts::{apply_mount, make_mounts_private, set_read_only};
use pid_namespace::enter_pid_namespace;

/// One `setrlimit` call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rlimit {
    pub resource: Resource,
    pub soft: u64,
    pub hard: u64,
}

/// Everything the child does to itself before `exec`, prepared by the parent.
#[derive(Debug, Default)]
pub(crate) struct Confinement {
    /// `cgroup.procs` of the run's own cgroup (`memory_cgroup.rs`), joined first so that every process the program
    /// starts is inside; `None` where runs have none.
    pub cgroup_procs: Option<CString>,
    /// `unshare` flags (CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID); 0 for none. With CLONE_NEWPID the
    /// child forks once more: the program becomes process 1 of the new namespace, and when it ends the kernel
    /// kills everything else in the namespace, however it detached itself.
    pub unshare_flags: libc::c_int,
    /// kt's pid: the child asks for SIGKILL when kt dies (PR_SET_PDEATHSIG) and checks kt is still its parent.
    /// `None` for a long-lived child whose spawning thread may end before it (the parent-death signal follows
    /// the thread, not the process); such a child ends on end-of-file on its stdin instead.
    pub die_with: Option<libc::pid_t>,
    /// Applied in order after `unshare`, only when CLONE_NEWNS is among the flags.
    pub mounts: Vec<MountOp>,
    /// Entered after the mounts, so that a work directory re-bound inside a private /tmp is the one entered.
    pub workdir: Option<CString>,
    pub rlimits: Vec<Rlimit>,
    /// (uid, gid) to switch to last; `None` keeps the parent's identity.
    pub identity: Option<(libc::uid_t, libc::gid_t)>,
    /// With CLONE_NEWUSER (kt is not root): the contents of /proc/self/uid_map and gid_map, mapping kt's own uid
    /// and gid to themselves. Unmapped, the child could not even mount a tmpfs (its owner would be unrepresentable:
    /// EOVERFLOW).
    pub id_maps: Option<(Vec<u8>, Vec<u8>)>,
    /// Make every mount read-only (recursively, before the mount steps; writable bind steps clear it again).
    pub read_only_host: bool,
    /// A seccomp filter installed last (`syscall_filter.rs`); `None` for none.
    pub syscall_filter: Option<Vec<libc::sock_filter>>,
    /// (source, target): make the parent's descriptor `source` (opened close-on-exec) the child's `target`, kept
    /// open across exec (the GPU worker's reply pipe on fd 3).
    pub extra_fd: Option<(libc::c_int, libc::c_int)>,
}

/// Installs `confinement` as the command's `pre_exec` hook.
pub(crate) fn install(command: &mut Command, mut confinement: Confinement) {
    // SAFETY: `apply` only makes async-signal-safe system calls on data prepared before the fork (see the module
    // documentation); it allocates nothing, and it reports failure through an `io::Error` built from an errno,
    // which does not allocate either.
    unsafe {
        command.pre_exec(move || apply(&mut confinement));
    }
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Runs in the child after `fork`, before `exec`. Order matters:
/// 1. `setsid` first: the child leads a new session and process group, so the parent can kill the whole group
///    (`kill(-pgid)`) including everything the program forks; then the run's cgroup, if it has one.
/// 2. every inherited descriptor ≥ 3 is marked close-on-exec (a caller such as `time -o` or a CI runner may leave
///    some open), then the one descriptor asked for is passed on.
/// 3. `unshare` and mounts while still privileged (they need CAP_SYS_ADMIN); with a PID namespace the program
///    runs in a grandchild, process 1 of that namespace (see [`enter_pid_namespace`]).
/// 4. rlimits before dropping the identity: lowering is always allowed, and RLIMIT_NPROC must be in place
///    before the first process of the new uid exists.
/// 5. the identity (groups, then gid, then uid: after `setuid` the others could no longer be changed), then the
///    parent-death signal, which a change of credentials would clear.
fn apply(c: &mut Confinement) -> io::Result<()> {
    // SAFETY (whole function): every call is a raw system call on pointers to C strings that live in `c`, which
    // the closure owns for the lifetime of the child.
    unsafe {
        check(libc::setsid())?;
        if let Some(procs) = &c.cgroup_procs {
            // "0" moves the writer; before any namespace or identity change, while kt's rights still apply
            write_file(procs, b"0")?;
        }
        close_inherited_descriptors();
        if let Some((source, target)) = c.extra_fd {
            if source == target {
                // dup2 onto itself keeps close-on-exec set: clear it instead.
                check(libc::fcntl(target, libc::F_SETFD, 0))?;
            } else {
                check(libc::dup2(source, target))?;
            }
        }
        if let Some(parent) = c.die_with {
            die_with_parent(parent)?;
        }
        if c.unshare_flags != 0 {
            check(libc::unshare(c.unshare_flags))?;
        }
        if let Some((uid_map, gid_map)) = &c.id_maps {
            // An unprivileged process may map only its own ids, and gid_map only after giving up setgroups.
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", uid_map)?;
            write_file(c"/proc/self/gid_map", gid_map)?;
        }
        if c.unshare_flags & libc::CLONE_NEWPID != 0 {
            enter_pid_namespace()?;
        }
        if c.unshare_flags & libc::CLONE_NEWNS != 0 {
            // Without this, mounts made here would propagate back to the host when / is a shared mount.
            check(make_mounts_private())?;
            for op in &mut c.mounts {
                if let MountOp::Bind { source, fd, .. } = op {
                    let opened = libc::open(source.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                    if opened == -1 {
                        return Err(io::Error::last_os_error());
                    }
                    fd.set(opened);
                }
            }
            if c.read_only_host {
                check(set_read_only(c"/", true, true))?;
            }
            for op in &c.mounts {
                apply_mount(op, c.read_only_host)?;
            }
        }
        if let Some(dir) = &c.workdir {
            check(libc::chdir(dir.as_ptr()))?;
        }
    }
    for limit in &c.rlimits {
        setrlimit(limit.resource, limit.soft, limit.hard)
            .map_err(|e| io::Error::from_raw_os_error(e as i32))?;
    }
    if let Some((uid, gid)) = c.identity {
        // SAFETY: plain system calls with integer arguments.
        unsafe {
            check(libc::setgroups(0, std::ptr::null()))?;
            check(libc::setresgid(gid, gid, gid))?;
            check(libc::setresuid(uid, uid, uid))?;
        }
    }
    if c.die_with.is_some() {
        // Changing credentials cleared the signal set above; in a PID namespace the parent is the waiting
        // intermediate process, which itself dies with kt.
        // SAFETY: one system call with integer arguments.
        check(unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            )
        })?;
    }
    if let Some(filter) = &c.syscall_filter {
        install_filter(filter)?;
    }
    Ok(())
}

/// Installs the seccomp filter (after PR_SET_NO_NEW_PRIVS, which an unprivileged process needs for it and which
/// keeps set-uid programs from gaining anything). Async-signal-safe: the program was built by the parent.
fn install_filter(filter: &[libc::sock_filter]) -> io::Result<()> {
    let program = libc::sock_fprog {
        len: filter.len() as libc::c_ushort,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: system calls with integer arguments and a pointer to a live filter program.
    unsafe {
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        check(libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &program as *const libc::sock_fprog,
        ) as libc::c_int)
    }
}

/// Marks every descriptor ≥ 3 close-on-exec: the program gets stdin, stdout, stderr and what kt passes on
/// explicitly, nothing a caller of kt left open. Close-on-exec rather than closed, because std's own
/// error-report pipe (already close-on-exec) must stay open until `exec`.
fn close_inherited_descriptors() {
    // SAFETY: plain system calls with integer arguments.
    unsafe {
        if libc::close_range(
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
        ) == 0
        {
            return;
        }
        // Kernels before 5.11: one fcntl per possible descriptor, up to the open-files limit.
        let mut limit: libc::rlimit = std::mem::zeroed();
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 20) as libc::c_int
        } else {
            1024
        };
        for fd in 3..top {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags != -1 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// Asks for SIGKILL when kt dies, then checks kt did not die before the request (the child would then have been
/// re-parented already and the signal never come).
fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: plain system calls with integer arguments.
    unsafe {
        check(libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ))?;
        if libc::getppid() != parent {
            libc::_exit(128 + libc::SIGKILL);
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` with open/write/close (async-signal-safe).
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: raw system calls on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd == -1 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}
