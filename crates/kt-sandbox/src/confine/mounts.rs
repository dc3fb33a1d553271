//! The child's private view of the file system: the mount steps the parent plans (`view.rs`) and the child
//! applies in its own mount namespace, async-signal-safe (see the parent module).

use std::ffi::CString;
use std::io;

use super::check;

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
    pub(super) fn set(&mut self, fd: libc::c_int) {
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

/// Makes every mount of this mount namespace private: what is mounted after it is seen nowhere else, and
/// never propagates back to the host when `/` is a shared mount. Async-signal-safe (one system call), for a
/// forked child. Returns mount's result.
pub(super) fn make_mounts_private() -> libc::c_int {
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
pub(super) fn set_read_only(
    path: &std::ffi::CStr,
    read_only: bool,
    recursive: bool,
) -> libc::c_int {
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

/// # Safety
/// Called only from [`super::apply`], in the child, with pointers owned by the confinement.
pub(super) unsafe fn apply_mount(op: &MountOp, read_only_host: bool) -> io::Result<()> {
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
