//! From a [`Policy`] and this machine's protections to a confined [`Command`]: a fresh identity when kt is root,
//! the namespaces, the file-system view, the rlimits and a scrubbed environment.

use std::ffi::OsStr;
use std::process::Command;

use nix::sys::resource::Resource;

use crate::confine::{self, Confinement, MountOp, Rlimit};
use crate::environment;
use crate::error::SandboxError;
use crate::identity::RunIdentity;
use crate::policy::Policy;
use crate::protections::Protections;
use crate::sandbox::Sandbox;
use crate::view;
use crate::workdir::Workdir;

/// A command ready to spawn, with what must outlive the spawn.
pub(crate) struct Prepared {
    pub(crate) command: Command,
    pub(crate) confinement: Confinement,
    pub(crate) identity: Option<RunIdentity>,
    pub(crate) pids_enforced: bool,
}

impl Prepared {
    /// Passes the parent's descriptor `source` to the child as `target`.
    pub(crate) fn confinement_extra_fd(
        &mut self,
        source: std::os::fd::RawFd,
        target: std::os::fd::RawFd,
    ) {
        self.confinement.extra_fd = Some((source, target));
    }

    /// Installs the confinement; the command is then ready to spawn.
    pub(crate) fn finish(self) -> (Command, Option<RunIdentity>) {
        let Prepared {
            mut command,
            confinement,
            identity,
            ..
        } = self;
        confine::install(&mut command, confinement);
        (command, identity)
    }
}

impl Sandbox {
    /// The command that runs `program` with `args` in `workdir`, confined as this sandbox's policy asks and
    /// this machine allows.
    pub(crate) fn prepare<S: AsRef<OsStr>>(
        &self,
        workdir: &Workdir,
        program: &OsStr,
        args: &[S],
    ) -> Result<Prepared, SandboxError> {
        let p = &self.policy;
        self.check_ready()?;
        let active = self.protections();
        let identity = active.unprivileged_user.then(RunIdentity::allocate);
        if let Some(id) = identity {
            workdir.grant(id)?;
        }
        let mut confinement = self.namespaces(workdir, &active, identity.is_some())?;
        let pids_enforced = active.pids_limit;
        confinement.rlimits = rlimits(p, pids_enforced);
        confinement.identity = identity.map(|id| (id.uid, id.gid));
        let mut command = Command::new(program);
        command.args(args).env_clear().envs(environment::build(
            &p.env,
            std::env::vars_os(),
            workdir.path(),
        ));
        Ok(Prepared {
            confinement,
            command,
            identity,
            pids_enforced,
        })
    }

    /// The work directory, the namespaces and the file-system view of a run with the `active` protections.
    fn namespaces(
        &self,
        workdir: &Workdir,
        active: &Protections,
        switches_user: bool,
    ) -> Result<Confinement, SandboxError> {
        let p = &self.policy;
        let mut confinement = Confinement {
            workdir: Some(path_cstring(workdir.path())?),
            ..Confinement::default()
        };
        if active.network_namespace {
            confinement.unshare_flags |= libc::CLONE_NEWNET;
        }
        let needs_view =
            active.mount_namespace || (active.unprivileged_user && !p.readable_paths.is_empty());
        if needs_view && self.machine.mount_namespace {
            let mut view = view::plan(
                workdir.path(),
                &p.readable_paths,
                &p.hidden_paths,
                active.mount_namespace,
                switches_user,
            )?;
            view.read_only_host &= active.read_only_host;
            if !active.read_only_host {
                // (mount_setattr is what failed here)
                view.ops
                    .retain(|op| !matches!(op, MountOp::ReadOnly { .. }));
            }
            confinement.read_only_host = view.read_only_host;
            if !view.ops.is_empty() {
                confinement.unshare_flags |= libc::CLONE_NEWNS;
                confinement.mounts = view.ops;
            }
            if active.pid_namespace {
                confinement.unshare_flags |= libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
                confinement.mounts.push(MountOp::Proc);
            }
        }
        if active.syscall_filter {
            confinement.syscall_filter = Some(crate::syscall_filter::program());
        }
        if active.user_namespace {
            // Not root: the namespaces need a user namespace, and so does the process limit (the kernel counts
            // RLIMIT_NPROC per user namespace, so only this run's processes count).
            confinement.unshare_flags |= libc::CLONE_NEWUSER;
            confinement.id_maps = Some(confine::identity_maps(
                nix::unistd::geteuid().as_raw(),
                nix::unistd::getegid().as_raw(),
            ));
        }
        Ok(confinement)
    }
}

/// The rlimits of a run under `p`; the process limit only where it is enforced (`pids_enforced`).
fn rlimits(p: &Policy, pids_enforced: bool) -> Vec<Rlimit> {
    let mut rlimits = Vec::new();
    let mut limit = |resource, value: Option<u64>, extra: u64| {
        if let Some(v) = value {
            // Without privileges a hard limit can only be lowered: clamp to the current one rather than fail.
            let current_hard = nix::sys::resource::getrlimit(resource)
                .map(|(_, hard)| hard)
                .unwrap_or(libc::RLIM_INFINITY);
            rlimits.push(Rlimit {
                resource,
                soft: v.min(current_hard),
                hard: v.saturating_add(extra).min(current_hard),
            });
        }
    };
    // CPU: SIGXCPU at the soft limit, SIGKILL a second later if the program ignores it.
    limit(Resource::RLIMIT_CPU, p.cpu_seconds, 1);
    limit(Resource::RLIMIT_AS, p.address_space, 0);
    // no one file past the directory's quota either
    let file_size = match (p.file_size, p.disk_quota) {
        (Some(f), Some(q)) => Some(f.min(q)),
        (f, q) => f.or(q),
    };
    limit(Resource::RLIMIT_FSIZE, file_size, 0);
    limit(Resource::RLIMIT_NOFILE, p.open_files, 0);
    // No core files from untrusted programs: they would land in the work directory, possibly gigabytes.
    limit(Resource::RLIMIT_CORE, Some(0), 0);
    if pids_enforced {
        limit(Resource::RLIMIT_NPROC, p.processes, 0);
    }
    rlimits
}

fn path_cstring(path: &std::path::Path) -> Result<std::ffi::CString, SandboxError> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Workdir {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "path contains a NUL byte"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_may_not_outgrow_the_quota_and_no_core_file_is_written() {
        let mut p = Policy::for_generator();
        p.file_size = Some(1 << 30);
        p.disk_quota = Some(1 << 20);
        let limits = rlimits(&p, false);
        let of = |r| limits.iter().find(|l| l.resource == r);
        assert!(of(Resource::RLIMIT_FSIZE).is_some_and(|l| l.soft <= 1 << 20));
        assert!(of(Resource::RLIMIT_CORE).is_some_and(|l| l.soft == 0 && l.hard == 0));
        assert!(
            of(Resource::RLIMIT_NPROC).is_none(),
            "not enforced, not set"
        );
    }
}
