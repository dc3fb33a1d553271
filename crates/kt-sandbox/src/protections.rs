//! Which protections actually work on this machine, detected once per process and cached.
//!
//! Namespaces, mounts and switching uid depend on privileges, the kernel's configuration and the container kt runs
//! in; rather than trusting documentation, kt tries each once in a throw-away child (a few milliseconds) and
//! reports the answer (`kt doctor`'s sandbox line).

use std::sync::OnceLock;

use serde::Serialize;

use crate::confine;
use crate::identity::RunIdentity;

/// What a sandboxed run gets here. Resource limits (time, CPU, address space, file size, open files, output) and
/// the process-group kill always work; the fields say which of the rest do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Protections {
    /// kt runs as root (then it can switch the program to an unprivileged uid).
    pub running_as_root: bool,
    /// A network namespace of its own: no network at all, not even loopback.
    pub network_namespace: bool,
    /// A mount namespace: private /tmp and /dev/shm, directories the program must not see replaced by empty ones.
    pub mount_namespace: bool,
    /// The program runs as a fresh unprivileged uid (files outside its work directory are not writable).
    pub unprivileged_user: bool,
    /// The process limit is enforced (RLIMIT_NPROC is ignored for root, and for another user it would count all of
    /// that user's processes, so it is only enforced together with `unprivileged_user`).
    pub pids_limit: bool,
    /// A user namespace is needed for the namespaces (kt is not root).
    pub user_namespace: bool,
}

static DETECTED: OnceLock<Protections> = OnceLock::new();

impl Protections {
    /// Detects what works here (once per process; later calls return the cached answer).
    pub fn detect() -> Protections {
        *DETECTED.get_or_init(|| {
            let root = nix::unistd::geteuid().is_root();
            let probe = RunIdentity::probe();
            let found = confine::probe(probe.uid, probe.gid, !root);
            let unprivileged_user = root && found.switch_user;
            let protections = Protections {
                running_as_root: root,
                network_namespace: found.network_namespace,
                mount_namespace: found.mount_namespace,
                unprivileged_user,
                pids_limit: unprivileged_user,
                user_namespace: !root,
            };
            tracing::debug!(?protections, "sandbox protections detected");
            protections
        })
    }

    /// One line for `kt doctor`, e.g. "network namespace, private /tmp, unprivileged uid, process limit".
    pub fn summary(&self) -> String {
        let mut on = Vec::new();
        let mut off = Vec::new();
        for (active, name) in [
            (self.network_namespace, "network namespace"),
            (self.mount_namespace, "private /tmp"),
            (self.unprivileged_user, "unprivileged uid"),
            (self.pids_limit, "process limit"),
        ] {
            if active {
                on.push(name)
            } else {
                off.push(name)
            }
        }
        let mut text = format!(
            "active: {}",
            if on.is_empty() {
                "rlimits only".to_string()
            } else {
                on.join(", ")
            }
        );
        if !off.is_empty() {
            text.push_str(&format!("; unavailable: {}", off.join(", ")));
        }
        text
    }

    /// True when every protection kt knows is active.
    pub fn complete(&self) -> bool {
        self.network_namespace && self.mount_namespace && self.unprivileged_user && self.pids_limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_cached_and_consistent() {
        let a = Protections::detect();
        let b = Protections::detect();
        assert_eq!(a, b);
        assert_eq!(a.pids_limit, a.unprivileged_user);
        if !a.running_as_root {
            assert!(!a.unprivileged_user);
        }
        println!("sandbox protections here: {}", a.summary());
    }
}
