//! The only `unsafe` code of kt-sandbox: what runs in the child between `fork` and `exec`, and two tiny forked
//! helpers (the capability probe and the reaper).
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

/// One `setrlimit` call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rlimit {
    pub resource: Resource,
    pub soft: u64,
    pub hard: u64,
}

/// One step of building the child's private view of the file system (in its own mount namespace).
#[derive(Debug)]
pub(crate) enum MountOp {
    /// Mount a fresh tmpfs on `target` (hides what was there). `data` holds the tmpfs options.
    Tmpfs { target: CString, data: CString },
    /// Create a directory (inside a tmpfs mounted by an earlier step); "already exists" is not an error.
    Mkdir { path: CString },
    /// Make the mount at `target` read-only (not those below it): a hidden directory's empty tmpfs, once the
    /// paths kept in it are bound, so that nothing is written where the user's files appear to be.
    ReadOnly { target: CString },
    /// Mount a fresh procfs on /proc: inside a PID namespace it shows only the namespace's processes.
    Proc,
    /// Bind-mount `source` on `target`. `source` is opened (O_PATH) in the child right after `unshare`, before
    /// any tmpfs covers it: a bind mount's source must belong to the child's own mount namespace (a descriptor
    /// opened by the parent refers to the parent's namespace, and mounting from it fails with EINVAL).
    Bind {
        source: CString,
        target: CString,
        readonly: bool,
        fd: BindSource,
    },
}

/// Storage for a bind source's descriptor and its `/proc/self/fd/N` path, filled in by the child without
/// allocating.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BindSource {
    fd: libc::c_int,
    proc_path: [u8; 32],
}

impl Default for BindSource {
    fn default() -> Self {
        Self {
            fd: -1,
            proc_path: [0; 32],
        }
    }
}

impl BindSource {
    /// Writes "/proc/self/fd/<fd>\0" into the fixed buffer (no allocation, no formatting machinery).
    fn set(&mut self, fd: libc::c_int) {
        self.fd = fd;
        let prefix = b"/proc/self/fd/";
        self.proc_path[..prefix.len()].copy_from_slice(prefix);
        let mut digits = [0u8; 12];
        let mut n = fd.max(0) as u32;
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for i in 0..len {
            self.proc_path[prefix.len() + i] = digits[len - 1 - i];
        }
        self.proc_path[prefix.len() + len] = 0;
    }
}

/// Everything the child does to itself before `exec`, prepared by the parent.
#[derive(Debug, Default)]
pub(crate) struct Confinement {
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

/// Makes every mount of this mount namespace private: what is mounted after it is seen nowhere else, and
/// never propagates back to the host when `/` is a shared mount. Async-signal-safe (one system call), for a
/// forked child. Returns mount's result.
fn make_mounts_private() -> libc::c_int {
    // SAFETY: one system call with static C strings and null data.
    unsafe {
        libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
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
///    (`kill(-pgid)`) including everything the program forks.
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

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Sets (or clears) the read-only flag of the mount at `path`, and with `recursive` of every mount below it, in one
/// system call (Linux 5.12). Async-signal-safe. Returns the system call's result.
fn set_read_only(path: &std::ffi::CStr, read_only: bool, recursive: bool) -> libc::c_int {
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: one system call on a NUL-terminated path and a live, correctly sized struct.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) as libc::c_int
    }
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

/// After `unshare(CLONE_NEWPID)` the caller itself stays outside the new namespace; its next child is the
/// namespace's process 1. So fork: the grandchild returns and goes on to `exec` the program; this process (the one
/// kt knows by pid and process group) closes every descriptor, waits, and ends the way the program ended, so kt's
/// wait, CPU accounting (its waited-for child) and signals work as without a namespace. The intermediate asks
/// for SIGKILL when kt dies, and the grandchild for SIGKILL when the intermediate dies; when process 1 dies, the
/// kernel kills the rest of the namespace.
///
/// # Safety
/// Called only from [`apply`], in the child.
unsafe fn enter_pid_namespace() -> io::Result<()> {
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

/// # Safety
/// Called only from [`apply`], in the child, with pointers owned by the confinement.
unsafe fn apply_mount(op: &MountOp, read_only_host: bool) -> io::Result<()> {
    // SAFETY: raw system calls on NUL-terminated strings owned by `op`.
    unsafe {
        match op {
            MountOp::Tmpfs { target, data } => check(libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                data.as_ptr().cast(),
            )),
            MountOp::ReadOnly { target } => check(set_read_only(target, true, false)),
            MountOp::Proc => check(libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            )),
            MountOp::Mkdir { path } => {
                if libc::mkdir(path.as_ptr(), 0o755) == -1 {
                    let err = io::Error::last_os_error();
                    if err.raw_os_error() != Some(libc::EEXIST) {
                        return Err(err);
                    }
                }
                Ok(())
            }
            MountOp::Bind {
                target,
                readonly,
                fd,
                ..
            } => {
                let flags = libc::MS_BIND | libc::MS_REC;
                let source = fd.proc_path.as_ptr().cast::<libc::c_char>();
                check(libc::mount(
                    source,
                    target.as_ptr(),
                    std::ptr::null(),
                    flags,
                    std::ptr::null(),
                ))?;
                if !*readonly && read_only_host {
                    // the bind copied the read-only flag the whole host got
                    check(set_read_only(target, false, false))?;
                }
                if *readonly {
                    // A bind mount ignores MS_RDONLY on creation; read-only takes a second, remounting call.
                    check(libc::mount(
                        std::ptr::null(),
                        target.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID,
                        std::ptr::null(),
                    ))?;
                }
                Ok(())
            }
        }
    }
}

/// What a forked probe child managed to do to itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProbeResult {
    pub network_namespace: bool,
    pub mount_namespace: bool,
    /// PID and IPC namespaces with a fresh /proc (they come with the mount namespace).
    pub pid_namespace: bool,
    /// In such a mount namespace every mount could be made read-only at once (mount_setattr, Linux 5.12).
    pub read_only_host: bool,
    /// A seccomp filter could be installed and refused `socket(AF_UNIX)`.
    pub syscall_filter: bool,
    pub switch_user: bool,
    /// Not root: a user namespace with kt's own uid mapped could be made.
    pub user_namespace: bool,
    /// Not root: inside such a user namespace RLIMIT_NPROC counts only the namespace's processes (Linux ≥ 5.14
    /// accounts it per user namespace), so a process limit can be enforced without counting the user's others.
    pub namespace_process_limit: bool,
}

/// Tries, each in a throw-away forked child, to create a network namespace, a mount namespace with a tmpfs, and
/// to switch to `uid`/`gid`. `user_namespace` adds CLONE_NEWUSER to the namespace probes (needed when not root).
/// The probes never touch the parent.
pub(crate) fn probe(uid: libc::uid_t, gid: libc::gid_t, user_namespace: bool) -> ProbeResult {
    let userns = if user_namespace {
        libc::CLONE_NEWUSER
    } else {
        0
    };
    let (own_uid, own_gid) = (
        nix::unistd::geteuid().as_raw(),
        nix::unistd::getegid().as_raw(),
    );
    let (uid_map, gid_map) = identity_maps(own_uid, own_gid);
    let (uid_map, gid_map) = (uid_map.as_slice(), gid_map.as_slice());
    let filter = crate::syscall_filter::program();
    let filter = filter.as_slice();
    ProbeResult {
        network_namespace: probe_in_child(&|| {
            // SAFETY: one system call.
            unsafe { libc::unshare(userns | libc::CLONE_NEWNET) == 0 }
        }),
        mount_namespace: probe_in_child(&|| {
            // SAFETY: system calls with static C strings; the tmpfs lives in the child's private namespace.
            unsafe {
                libc::unshare(userns | libc::CLONE_NEWNS) == 0
                    && make_mounts_private() == 0
                    && libc::mount(
                        c"tmpfs".as_ptr(),
                        c"/tmp".as_ptr(),
                        c"tmpfs".as_ptr(),
                        0,
                        c"size=64k".as_ptr().cast(),
                    ) == 0
            }
        }),
        read_only_host: probe_in_child(&|| {
            // SAFETY: system calls with static C strings; the change lives in the child's private namespace.
            unsafe {
                libc::unshare(userns | libc::CLONE_NEWNS) == 0
                    && make_mounts_private() == 0
                    && set_read_only(c"/", true, true) == 0
            }
        }),
        syscall_filter: crate::syscall_filter::supported()
            && probe_in_child(&|| {
                install_filter(filter).is_ok() && {
                    // SAFETY: one system call; a descriptor it returned would die with the child.
                    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
                    fd == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
                }
            }),
        pid_namespace: probe_in_child(&|| {
            // SAFETY: system calls with static C strings; the grandchild `_exit`s, the mounts are private.
            unsafe {
                let entered = if user_namespace {
                    enter_own_user_namespace(uid_map, gid_map)
                } else {
                    true
                };
                if !entered
                    || libc::unshare(libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWIPC)
                        != 0
                {
                    return false;
                }
                let pid = libc::fork();
                if pid == 0 {
                    let mounted = make_mounts_private() == 0
                        && libc::mount(
                            c"proc".as_ptr(),
                            c"/proc".as_ptr(),
                            c"proc".as_ptr(),
                            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                            std::ptr::null(),
                        ) == 0;
                    libc::_exit(if mounted && libc::getpid() == 1 { 0 } else { 1 });
                }
                pid > 0 && wait_exit_code(pid) == Some(0)
            }
        }),
        user_namespace: user_namespace
            && probe_in_child(&|| enter_own_user_namespace(uid_map, gid_map)),
        namespace_process_limit: user_namespace
            && probe_in_child(&|| {
                enter_own_user_namespace(uid_map, gid_map)
                    && process_limit_counts_only_this_namespace()
            }),
        switch_user: probe_in_child(&|| {
            // SAFETY: system calls with integer arguments.
            unsafe {
                libc::setgroups(0, std::ptr::null()) == 0
                    && libc::setresgid(gid, gid, gid) == 0
                    && libc::setresuid(uid, uid, uid) == 0
                    && libc::getuid() == uid
            }
        }),
    }
}

/// The contents of /proc/self/uid_map and gid_map that map `uid` and `gid` to themselves in a new user namespace.
pub(crate) fn identity_maps(uid: libc::uid_t, gid: libc::gid_t) -> (Vec<u8>, Vec<u8>) {
    (
        format!("{uid} {uid} 1\n").into_bytes(),
        format!("{gid} {gid} 1\n").into_bytes(),
    )
}

/// In a probe child: a new user namespace with kt's ids mapped (as the sandbox makes for a non-root kt).
fn enter_own_user_namespace(uid_map: &[u8], gid_map: &[u8]) -> bool {
    // SAFETY: one system call; the writes below are async-signal-safe.
    let entered = unsafe { libc::unshare(libc::CLONE_NEWUSER) == 0 };
    entered
        && write_file(c"/proc/self/setgroups", b"deny").is_ok()
        && write_file(c"/proc/self/uid_map", uid_map).is_ok()
        && write_file(c"/proc/self/gid_map", gid_map).is_ok()
}

/// In a probe child inside a fresh user namespace: with RLIMIT_NPROC = 2 one fork must succeed although the user
/// has more processes and threads outside (kt's own), and with RLIMIT_NPROC = 1 a fork must fail.
fn process_limit_counts_only_this_namespace() -> bool {
    let fork_works = || {
        // SAFETY: the grandchild only `_exit`s; the child waits for it.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                libc::_exit(0);
            }
            pid > 0 && wait_exit_code(pid) == Some(0)
        }
    };
    setrlimit(Resource::RLIMIT_NPROC, 2, 2).is_ok()
        && fork_works()
        && setrlimit(Resource::RLIMIT_NPROC, 1, 1).is_ok()
        && !fork_works()
}

/// Forks; the child runs `test` (async-signal-safe calls only) and exits 0 when it returned true.
fn probe_in_child(test: &dyn Fn() -> bool) -> bool {
    // SAFETY: the child runs only `test`, which makes raw system calls, then `_exit`s without running any Rust
    // destructor or atexit handler.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(if test() { 0 } else { 1 });
        }
        if pid < 0 {
            return false;
        }
        wait_exit_code(pid) == Some(0)
    }
}

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
fn wait_exit_code(pid: libc::pid_t) -> Option<i32> {
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
