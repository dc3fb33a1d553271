//! What this machine allows, tried once in throw-away forked children: namespaces, a read-only host, the
//! system-call filter, the uid switch and a per-namespace process limit.

use std::io;

use nix::sys::resource::{Resource, setrlimit};

use super::mounts::{make_mounts_private, set_read_only};
use super::reap::wait_exit_code;
use super::{install_filter, write_file};

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

/// Whether a forked child can move itself into the cgroup of `procs` (its `cgroup.procs`), as a run's child
/// does before `exec`.
pub(crate) fn joins_cgroup(procs: &std::ffi::CStr) -> bool {
    probe_in_child(&|| write_file(procs, b"0").is_ok())
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
