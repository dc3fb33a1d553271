//! Which protections actually work on this machine, detected once per process and cached.
//!
//! Namespaces, mounts and switching uid depend on privileges, the kernel's configuration and the container kt runs
//! in; rather than trusting documentation, kt tries each once in a throw-away child (a few milliseconds) and
//! reports the answer: `kt doctor` lists each protection on its own line, and a run records the protections its
//! generator programs got ([`Protections`] is serialisable for run.json and the report).

use std::sync::OnceLock;

pub use kt_record::{ProtectionLine, Protections};

use crate::confine;
use crate::identity::RunIdentity;

static DETECTED: OnceLock<Protections> = OnceLock::new();

/// Detects what works here (once per process; later calls return the cached answer).
pub fn detect_protections() -> Protections {
    *DETECTED.get_or_init(|| {
        let root = nix::unistd::geteuid().is_root();
        let probe = RunIdentity::probe();
        let found = confine::probe(probe.uid, probe.gid, !root);
        let protections = decide(root, found, crate::memory_cgroup::memory_cgroup().is_ok());
        tracing::debug!(?protections, "sandbox protections detected");
        protections
    })
}

/// What a run gets, from kt's privileges and what the probes managed.
fn decide(root: bool, found: confine::ProbeResult, memory_cgroup: bool) -> Protections {
    let unprivileged_user = root && found.switch_user;
    let user_namespace = !root && found.user_namespace;
    Protections {
        running_as_root: root,
        network_namespace: found.network_namespace,
        mount_namespace: found.mount_namespace,
        pid_namespace: found.mount_namespace && found.pid_namespace,
        read_only_host: found.mount_namespace && found.read_only_host,
        syscall_filter: found.syscall_filter,
        unprivileged_user,
        pids_limit: unprivileged_user || (user_namespace && found.namespace_process_limit),
        user_namespace,
        memory_cgroup,
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
            read_only_host: all,
            syscall_filter: all,
            switch_user: all,
            user_namespace: all,
            namespace_process_limit: all,
        }
    }

    #[test]
    fn detection_is_cached_and_consistent() {
        let a = detect_protections();
        let b = detect_protections();
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
        let p = decide(true, found(true), false);
        assert!(p.complete(), "{p:?}");
        assert!(!p.user_namespace, "root needs no user namespace");
        let no_switch = decide(
            true,
            confine::ProbeResult {
                switch_user: false,
                ..found(true)
            },
            false,
        );
        assert!(!no_switch.unprivileged_user && !no_switch.pids_limit);
    }

    #[test]
    fn a_user_gets_a_user_namespace_and_a_process_limit_where_the_kernel_counts_per_namespace() {
        let p = decide(false, found(true), false);
        assert!(p.user_namespace && p.pids_limit && p.network_namespace);
        assert!(!p.unprivileged_user, "no uid switch without root");
        let old_kernel = decide(
            false,
            confine::ProbeResult {
                namespace_process_limit: false,
                ..found(true)
            },
            false,
        );
        assert!(old_kernel.user_namespace && !old_kernel.pids_limit);
        let no_userns = decide(false, found(false), false);
        assert!(!no_userns.user_namespace && !no_userns.pids_limit && !no_userns.network_namespace);
        assert!(no_userns.rlimits);
    }

    #[test]
    fn each_protection_has_its_own_line_and_missing_ones_say_how_to_get_them() {
        let lines = decide(false, found(false), false).lines();
        let names: Vec<&str> = lines.iter().map(|l| l.name).collect();
        assert_eq!(
            names,
            [
                "network namespace",
                "private /tmp",
                "PID and IPC namespaces",
                "private home",
                "system-call filter",
                "uid switch",
                "user namespace",
                "process limit",
                "run memory",
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
        assert!(lines[9].active, "rlimits always work");
    }

    #[test]
    fn the_summary_names_what_is_on_and_what_is_off() {
        let full = decide(true, found(true), false).summary();
        assert_eq!(
            full,
            "active: network namespace, private /tmp, PID and IPC namespaces, private home, system-call filter, \
             uid switch, process limit, run memory, rlimits"
        );
        let bare = decide(false, found(false), false).summary();
        assert_eq!(
            bare,
            "active: rlimits; unavailable: network namespace, private /tmp, PID and IPC namespaces, private home, \
             system-call filter, uid switch, process limit, run memory"
        );
    }

    #[test]
    fn the_record_round_trips_and_an_old_record_reads_as_rlimits_only() {
        let p = decide(true, found(true), false);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Protections>(&json).unwrap(), p);
        let old: Protections = serde_json::from_str("{}").unwrap();
        assert_eq!(old, Protections::default());
    }
}
