//! Which protections actually work on this machine, detected once per process and cached.
//!
//! Namespaces, mounts and switching uid depend on privileges, the kernel's configuration and the container kt runs
//! in; rather than trusting documentation, kt tries each once in a throw-away child (a few milliseconds) and
//! reports the answer: `kt doctor` lists each protection on its own line, and a run records the protections its
//! generator programs got ([`Protections`] is serialisable for run.json and the report).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::confine;
use crate::identity::RunIdentity;

/// What a sandboxed run gets here. Resource limits (time, CPU, address space, file size, open files, output) and
/// the process-group kill always work (`rlimits`); the other fields say which of the rest do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Protections {
    /// kt runs as root (then it can switch the program to an unprivileged uid).
    pub running_as_root: bool,
    /// A network namespace of its own: no network at all, not even loopback.
    pub network_namespace: bool,
    /// A mount namespace: private /tmp and /dev/shm, directories the program must not see replaced by empty ones.
    pub mount_namespace: bool,
    /// PID and IPC namespaces (with the mount namespace): the program sees only its own processes and a fresh
    /// /proc, its System V shared memory, semaphores and queues are private and vanish with it, and when it ends
    /// the kernel kills every process it left, however detached.
    pub pid_namespace: bool,
    /// The program runs as a fresh unprivileged uid (files outside its work directory are not writable).
    pub unprivileged_user: bool,
    /// The process limit is enforced: as root through the unprivileged uid (RLIMIT_NPROC is ignored for root),
    /// otherwise inside a user namespace of its own where the kernel counts only the namespace's processes.
    pub pids_limit: bool,
    /// kt is not root and the program gets a user namespace of its own (kt's uid mapped to itself), which the
    /// other namespaces and the process limit need.
    pub user_namespace: bool,
    /// Time, CPU, address-space, file-size and open-file limits and the process-group kill (always on).
    pub rlimits: bool,
}

impl Default for Protections {
    /// Nothing but rlimits (what an old run.json without this record is read as).
    fn default() -> Self {
        Self {
            running_as_root: false,
            network_namespace: false,
            mount_namespace: false,
            pid_namespace: false,
            unprivileged_user: false,
            pids_limit: false,
            user_namespace: false,
            rlimits: true,
        }
    }
}

/// One protection, as `kt doctor` and the report show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtectionLine {
    /// Short name, e.g. "network namespace".
    pub name: &'static str,
    pub active: bool,
    /// What it means here, and when inactive, why and how to get it.
    pub detail: String,
}

static DETECTED: OnceLock<Protections> = OnceLock::new();

impl Protections {
    /// Detects what works here (once per process; later calls return the cached answer).
    pub fn detect() -> Protections {
        *DETECTED.get_or_init(|| {
            let root = nix::unistd::geteuid().is_root();
            let probe = RunIdentity::probe();
            let found = confine::probe(probe.uid, probe.gid, !root);
            let protections = decide(root, found);
            tracing::debug!(?protections, "sandbox protections detected");
            protections
        })
    }

    /// The protections, one line each, in the order of their importance for LLM-written programs.
    pub fn lines(&self) -> Vec<ProtectionLine> {
        let line = |name, active, on: &str, off: String| ProtectionLine {
            name,
            active,
            detail: if active { on.to_string() } else { off },
        };
        let userns_fix = if self.running_as_root {
            "kt is root, but the kernel or container refuses (a container without CAP_SYS_ADMIN?)"
                .to_string()
        } else {
            "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu \
             kernel.apparmor_restrict_unprivileged_userns=0) or run kt as root"
                .to_string()
        };
        vec![
            line(
                "network namespace",
                self.network_namespace,
                "generated programs have no network",
                format!(
                    "unavailable: {userns_fix}; until then generated programs run only with --allow-unsandboxed \
                     or `[sandbox] allow_unsandboxed = true` in kt.toml"
                ),
            ),
            line(
                "private /tmp",
                self.mount_namespace,
                "a fresh /tmp, /var/tmp, /run and /dev/shm per run; nothing left behind there",
                format!("unavailable (programs share /tmp, /run and /dev/shm): {userns_fix}"),
            ),
            line(
                "PID and IPC namespaces",
                self.pid_namespace,
                "programs see only their own processes; their System V IPC is private; nothing they start \
                 outlives them",
                if self.mount_namespace {
                    "unavailable: the kernel refuses a PID namespace with a fresh /proc; processes a program \
                     detaches are still killed with its process group (and, as root, its uid)"
                        .to_string()
                } else {
                    format!("unavailable (it needs the mount namespace): {userns_fix}")
                },
            ),
            line(
                "uid switch",
                self.unprivileged_user,
                "each run gets a fresh unprivileged uid: it can write only its work directory",
                if self.running_as_root {
                    "unavailable: switching uid failed although kt is root".to_string()
                } else {
                    "not possible without root: programs keep your uid (and can write what you can); run kt as \
                     root for a uid of their own"
                        .to_string()
                },
            ),
            line(
                "user namespace",
                self.user_namespace || self.running_as_root,
                if self.running_as_root {
                    "not needed: kt is root"
                } else {
                    "programs run in a user namespace of their own (your uid mapped to itself)"
                },
                format!("unavailable: {userns_fix}"),
            ),
            line(
                "process limit",
                self.pids_limit,
                "at most 64 processes and threads per generator run",
                if self.running_as_root {
                    "unavailable: it needs the uid switch".to_string()
                } else {
                    format!(
                        "unavailable: it needs a user namespace and Linux 5.14 or later (which counts processes \
                         per namespace); {userns_fix}"
                    )
                },
            ),
            line(
                "rlimits",
                self.rlimits,
                "wall time, CPU time, memory, file size (each file; no quota on the work directory's total), open \
                 files and output are limited; inherited descriptors are closed; programs die with kt",
                "unavailable".to_string(),
            ),
        ]
    }

    /// One line, e.g. "active: network namespace, private /tmp, uid switch, process limit, rlimits".
    pub fn summary(&self) -> String {
        let lines = self.lines();
        let names = |active: bool| -> Vec<&str> {
            lines
                .iter()
                .filter(|l| l.active == active && l.name != "user namespace")
                .map(|l| l.name)
                .collect()
        };
        let mut text = format!("active: {}", names(true).join(", "));
        let off = names(false);
        if !off.is_empty() {
            text.push_str(&format!("; unavailable: {}", off.join(", ")));
        }
        text
    }

    /// True when every protection kt knows is active.
    pub fn complete(&self) -> bool {
        self.network_namespace
            && self.mount_namespace
            && self.pid_namespace
            && self.unprivileged_user
            && self.pids_limit
            && self.rlimits
    }
}

/// What a run gets, from kt's privileges and what the probes managed.
fn decide(root: bool, found: confine::ProbeResult) -> Protections {
    let unprivileged_user = root && found.switch_user;
    let user_namespace = !root && found.user_namespace;
    Protections {
        running_as_root: root,
        network_namespace: found.network_namespace,
        mount_namespace: found.mount_namespace,
        pid_namespace: found.mount_namespace && found.pid_namespace,
        unprivileged_user,
        pids_limit: unprivileged_user || (user_namespace && found.namespace_process_limit),
        user_namespace,
        rlimits: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(all: bool) -> confine::ProbeResult {
        confine::ProbeResult {
            network_namespace: all,
            mount_namespace: all,
            pid_namespace: all,
            switch_user: all,
            user_namespace: all,
            namespace_process_limit: all,
        }
    }

    #[test]
    fn detection_is_cached_and_consistent() {
        let a = Protections::detect();
        let b = Protections::detect();
        assert_eq!(a, b);
        assert!(a.rlimits);
        if a.running_as_root {
            assert_eq!(a.pids_limit, a.unprivileged_user);
            assert!(!a.user_namespace);
        } else {
            assert!(!a.unprivileged_user);
            assert!(!a.pids_limit || a.user_namespace);
        }
        println!("sandbox protections here: {}", a.summary());
    }

    #[test]
    fn root_gets_the_uid_switch_and_with_it_the_process_limit() {
        let p = decide(true, found(true));
        assert!(p.complete(), "{p:?}");
        assert!(!p.user_namespace, "root needs no user namespace");
        let no_switch = decide(
            true,
            confine::ProbeResult {
                switch_user: false,
                ..found(true)
            },
        );
        assert!(!no_switch.unprivileged_user && !no_switch.pids_limit);
    }

    #[test]
    fn a_user_gets_a_user_namespace_and_a_process_limit_where_the_kernel_counts_per_namespace() {
        let p = decide(false, found(true));
        assert!(p.user_namespace && p.pids_limit && p.network_namespace);
        assert!(!p.unprivileged_user, "no uid switch without root");
        let old_kernel = decide(
            false,
            confine::ProbeResult {
                namespace_process_limit: false,
                ..found(true)
            },
        );
        assert!(old_kernel.user_namespace && !old_kernel.pids_limit);
        let no_userns = decide(false, found(false));
        assert!(!no_userns.user_namespace && !no_userns.pids_limit && !no_userns.network_namespace);
        assert!(no_userns.rlimits);
    }

    #[test]
    fn each_protection_has_its_own_line_and_missing_ones_say_how_to_get_them() {
        let lines = decide(false, found(false)).lines();
        let names: Vec<&str> = lines.iter().map(|l| l.name).collect();
        assert_eq!(
            names,
            [
                "network namespace",
                "private /tmp",
                "PID and IPC namespaces",
                "uid switch",
                "user namespace",
                "process limit",
                "rlimits"
            ]
        );
        let net = &lines[0];
        assert!(!net.active);
        assert!(
            net.detail.contains("--allow-unsandboxed")
                && net.detail.contains("allow_unsandboxed = true"),
            "{}",
            net.detail
        );
        assert!(
            net.detail.contains("unprivileged_userns_clone"),
            "{}",
            net.detail
        );
        assert!(lines[6].active, "rlimits always work");
    }

    #[test]
    fn the_summary_names_what_is_on_and_what_is_off() {
        let full = decide(true, found(true)).summary();
        assert_eq!(
            full,
            "active: network namespace, private /tmp, PID and IPC namespaces, uid switch, process limit, rlimits"
        );
        let bare = decide(false, found(false)).summary();
        assert_eq!(
            bare,
            "active: rlimits; unavailable: network namespace, private /tmp, PID and IPC namespaces, uid switch, \
             process limit"
        );
    }

    #[test]
    fn the_record_round_trips_and_an_old_record_reads_as_rlimits_only() {
        let p = decide(true, found(true));
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Protections>(&json).unwrap(), p);
        let old: Protections = serde_json::from_str("{}").unwrap();
        assert_eq!(old, Protections::default());
    }
}
