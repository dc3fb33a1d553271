//! [`Sandbox`]: runs a program under a [`Policy`], once (blocking, output captured: `one_shot.rs`) or
//! long-lived (piped: `spawn.rs`), each through a command that `prepare.rs` confines. This file holds what
//! both share: the policy, the protections this machine gives under it, and the check made before a run.

use std::ffi::OsStr;

use crate::error::SandboxError;
use crate::policy::{NetworkIsolation, Policy, UserPolicy};
use crate::protections::{Protections, detect_protections};
use crate::workdir::Workdir;

/// Runs untrusted programs under one policy. Cheap to create; every run gets a fresh work directory (unless the
/// policy names one) and, when kt is root, a fresh unprivileged uid.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub(crate) policy: Policy,
    pub(crate) machine: Protections,
}

impl Sandbox {
    pub fn new(policy: Policy) -> Self {
        Self {
            policy,
            machine: detect_protections(),
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The protections runs of this sandbox get: what the machine supports, narrowed by the policy. This is what
    /// a run records (run.json, the report) for its generator programs.
    pub fn protections(&self) -> Protections {
        let m = self.machine;
        let p = &self.policy;
        let unprivileged_user = m.unprivileged_user && p.user == UserPolicy::DropIfRoot;
        let network_namespace = m.network_namespace && p.network != NetworkIsolation::Off;
        let mount_namespace = m.mount_namespace && p.private_tmp;
        let pid_namespace = m.pid_namespace && mount_namespace;
        let read_only_host = m.read_only_host && mount_namespace;
        let syscall_filter = m.syscall_filter && p.syscall_filter;
        // Not root: a process limit is the one reason to make a user namespace when no other namespace is made.
        let namespace_pids = m.user_namespace && m.pids_limit && p.processes.is_some();
        let user_namespace =
            m.user_namespace && (network_namespace || mount_namespace || namespace_pids);
        Protections {
            network_namespace,
            mount_namespace,
            pid_namespace,
            read_only_host,
            syscall_filter,
            unprivileged_user,
            pids_limit: p.processes.is_some() && (unprivileged_user || namespace_pids),
            user_namespace,
            memory_cgroup: m.memory_cgroup && p.memory.is_some(),
            ..m
        }
    }

    /// Checks, before anything is run, that this sandbox can run programs under its policy: fails with
    /// [`SandboxError::NetworkIsolationUnavailable`] (which says why and how to opt in) when the policy requires a
    /// network namespace that this machine cannot make. Callers check this before a run starts, so a user learns
    /// it before any LLM call.
    pub fn check_ready(&self) -> Result<(), SandboxError> {
        let active = self.protections();
        if self.policy.network == NetworkIsolation::Required && !active.network_namespace {
            return Err(SandboxError::NetworkIsolationUnavailable {
                why: if active.running_as_root {
                    "unshare(CLONE_NEWNET) fails even as root (a container without CAP_SYS_ADMIN?)"
                        .into()
                } else {
                    "kt is not root and unprivileged user namespaces are disabled".into()
                },
            });
        }
        Ok(())
    }

    /// A fresh work directory (or the policy's), to put input files in before [`Sandbox::run_in`].
    pub fn workdir(&self) -> Result<Workdir, SandboxError> {
        match &self.policy.workdir {
            Some(path) => Workdir::existing(path),
            None => Workdir::fresh(),
        }
    }

    pub(crate) fn spawn_error(&self, program: &OsStr, source: std::io::Error) -> SandboxError {
        let hint = if source.kind() == std::io::ErrorKind::PermissionDenied
            && self.protections().unprivileged_user
        {
            " by an unprivileged user (if it lies under a directory such as /root, add that path to Policy::readable_paths)".to_string()
        } else {
            String::new()
        };
        SandboxError::Spawn {
            program: program.to_string_lossy().into_owned(),
            source,
            hint,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::outcome::{Ending, Limit, Outcome};

    fn shell_policy() -> Policy {
        let mut p = Policy::for_generator().allow_unsandboxed(true);
        p.wall_timeout = Some(Duration::from_secs(10));
        p.cpu_seconds = Some(5);
        p.address_space = Some(1 << 30);
        p.output_cap = 64 * 1024;
        p
    }

    fn sh(policy: Policy, script: &str) -> Outcome {
        Sandbox::new(policy)
            .run("/bin/sh", &["-c", script], None)
            .unwrap()
    }

    #[test]
    fn exit_code_stdout_and_stderr_are_captured() {
        let o = sh(shell_policy(), "echo out; echo err >&2; exit 3");
        assert_eq!(o.ending, Ending::Finished { exit_code: 3 });
        assert_eq!(
            (o.stdout_text().as_str(), o.stderr_text().as_str()),
            ("out\n", "err\n")
        );
    }

    #[test]
    fn stdin_reaches_the_program() {
        let o = Sandbox::new(shell_policy())
            .run("/bin/cat", &[] as &[&str], Some(b"numbers 1 2 3"))
            .unwrap();
        assert!(o.success(), "{o:?}");
        assert_eq!(o.stdout, b"numbers 1 2 3");
    }

    #[test]
    fn program_starts_in_an_empty_private_work_directory_with_home_there() {
        let o = sh(shell_policy(), "ls -A; echo \"$PWD\"; echo \"$HOME\"");
        let out = o.stdout_text();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "the directory must be empty: {out}");
        assert_eq!(lines[0], lines[1], "HOME is the work directory: {out}");
        assert!(lines[0].contains("kt-sandbox-"), "{out}");
    }

    #[test]
    fn timeout_kills_the_whole_process_group_including_background_children() {
        let mut p = shell_policy();
        p.wall_timeout = Some(Duration::from_millis(300));
        let start = Instant::now();
        let o = sh(p, "sleep 100 & sleep 100 & wait");
        assert_eq!(
            o.ending,
            Ending::TimedOut {
                limit: Duration::from_millis(300)
            }
        );
        // Background sleeps hold the output pipes; if they survived, draining would wait the full grace period.
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "took {:?}",
            start.elapsed()
        );
    }

    #[test]
    fn busy_loop_is_stopped_by_the_cpu_limit() {
        let mut p = shell_policy();
        p.cpu_seconds = Some(1);
        let o = sh(p, "while :; do :; done");
        assert_eq!(o.ending, Ending::KilledByLimit { which: Limit::Cpu });
        assert!(o.cpu_time >= Duration::from_millis(900), "{:?}", o.cpu_time);
    }

    #[test]
    fn files_each_within_the_size_limit_that_fill_the_quota_stop_the_program() {
        let mut p = shell_policy();
        p.disk_quota = Some(1 << 20);
        let start = Instant::now();
        let o = sh(
            p,
            "for i in 1 2 3 4 5 6 7 8; do head -c 524288 /dev/zero > f$i; done; sleep 20",
        );
        let Ending::DiskQuotaExceeded { limit, used, .. } = o.ending else {
            panic!("{o:?}")
        };
        assert_eq!(limit, 1 << 20);
        assert!(used > 1 << 20, "{used}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_program_that_ends_past_the_quota_between_two_checks_is_refused_too() {
        let mut p = shell_policy();
        p.disk_quota = Some(1 << 20);
        let o = sh(
            p,
            "head -c 900000 /dev/zero > a; head -c 900000 /dev/zero > b",
        );
        assert!(
            matches!(o.ending, Ending::DiskQuotaExceeded { .. }),
            "{o:?}"
        );
        // and a single file is held to the quota by RLIMIT_FSIZE
        let mut p = shell_policy();
        p.disk_quota = Some(1 << 20);
        let o = sh(p, "exec head -c 3000000 /dev/zero > big");
        assert!(
            matches!(
                o.ending,
                Ending::KilledByLimit {
                    which: Limit::FileSize
                } | Ending::DiskQuotaExceeded { .. }
            ),
            "{o:?}"
        );
    }

    #[test]
    fn writing_a_file_past_the_size_limit_is_reported_as_the_file_size_limit() {
        let mut p = shell_policy();
        p.file_size = Some(1 << 20);
        let o = sh(p, "exec head -c 10000000 /dev/zero > big");
        assert_eq!(
            o.ending,
            Ending::KilledByLimit {
                which: Limit::FileSize
            }
        );
    }

    #[test]
    fn endless_output_is_cut_at_the_cap_and_the_program_killed() {
        let o = sh(shell_policy(), "yes kt");
        assert_eq!(o.ending, Ending::OutputTooLarge { limit: 64 * 1024 });
        assert_eq!(o.stdout.len(), 64 * 1024);
    }

    #[test]
    #[ignore = "needs network namespaces (root or unprivileged user namespaces); scripts/test.sh runs it where available"]
    fn no_network_interface_is_up_inside_the_namespace() {
        let sandbox = Sandbox::new(shell_policy());
        assert!(
            sandbox.protections().network_namespace,
            "network namespaces are unavailable here: {}",
            sandbox.protections().summary()
        );
        let o = sandbox.run("/bin/cat", &["/proc/net/dev"], None).unwrap();
        let interfaces: Vec<String> = o
            .stdout_text()
            .lines()
            .skip(2)
            .map(|l| l.split(':').next().unwrap_or("").trim().to_string())
            .collect();
        assert_eq!(interfaces, ["lo"], "{}", o.stdout_text());
    }

    /// A sandbox as it would be on a machine with `machine`'s protections.
    fn on_machine(policy: Policy, machine: Protections) -> Sandbox {
        Sandbox { policy, machine }
    }

    fn bare_user_machine() -> Protections {
        Protections::default()
    }

    #[test]
    fn generated_programs_do_not_run_without_a_network_namespace_unless_the_user_opts_in() {
        let strict = on_machine(Policy::for_generator(), bare_user_machine());
        let err = strict.check_ready().unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, SandboxError::NetworkIsolationUnavailable { .. }),
            "{text}"
        );
        assert!(
            text.contains("--allow-unsandboxed") && text.contains("allow_unsandboxed = true"),
            "the error says how to opt in: {text}"
        );
        assert!(
            text.contains("user namespaces"),
            "and how to fix the machine: {text}"
        );
        let run = strict.run("/bin/true", &[] as &[&str], None);
        assert!(
            matches!(run, Err(SandboxError::NetworkIsolationUnavailable { .. })),
            "{run:?}"
        );
        let opted_in = on_machine(
            Policy::for_generator().allow_unsandboxed(true),
            bare_user_machine(),
        );
        assert!(opted_in.check_ready().is_ok());
        assert!(
            !opted_in.protections().network_namespace,
            "and the record says so"
        );
        let isolated = Protections {
            network_namespace: true,
            user_namespace: true,
            ..bare_user_machine()
        };
        assert!(
            on_machine(Policy::for_generator(), isolated)
                .check_ready()
                .is_ok()
        );
    }

    #[test]
    fn a_user_gets_the_process_limit_through_a_user_namespace_where_the_kernel_counts_per_namespace()
     {
        let user = Protections {
            user_namespace: true,
            pids_limit: true,
            ..bare_user_machine()
        };
        let generator =
            on_machine(Policy::for_generator().allow_unsandboxed(true), user).protections();
        assert!(
            generator.pids_limit && generator.user_namespace,
            "{generator:?}"
        );
        assert!(!generator.unprivileged_user);
        // The GPU worker sets no process limit and needs no namespace for one.
        let mut worker = Policy::for_gpu_worker();
        worker.network = NetworkIsolation::Off;
        let worker = on_machine(worker, user).protections();
        assert!(!worker.pids_limit && !worker.user_namespace, "{worker:?}");
    }

    #[test]
    fn root_keeps_its_identity_for_the_gpu_worker_and_drops_it_for_generators() {
        let root = Protections {
            running_as_root: true,
            network_namespace: true,
            mount_namespace: true,
            pid_namespace: true,
            read_only_host: true,
            syscall_filter: true,
            unprivileged_user: true,
            pids_limit: true,
            ..Protections::default()
        };
        let generator = on_machine(Policy::for_generator(), root).protections();
        assert!(generator.complete(), "{generator:?}");
        let worker = on_machine(Policy::for_gpu_worker(), root).protections();
        assert!(
            !worker.unprivileged_user
                && !worker.pids_limit
                && !worker.mount_namespace
                && !worker.pid_namespace
                && !worker.read_only_host
                && !worker.syscall_filter
        );
        assert!(worker.network_namespace);
    }

    #[test]
    fn strict_network_mode_refuses_to_run_only_when_isolation_is_impossible() {
        let mut p = shell_policy();
        p.network = NetworkIsolation::Required;
        let sandbox = Sandbox::new(p);
        let result = sandbox.run("/bin/true", &[] as &[&str], None);
        if sandbox.protections().network_namespace {
            assert!(result.unwrap().success());
        } else {
            assert!(
                matches!(
                    result,
                    Err(SandboxError::NetworkIsolationUnavailable { .. })
                ),
                "{result:?}"
            );
        }
    }

    #[test]
    fn program_runs_as_a_fresh_unprivileged_user_when_kt_is_root() {
        let sandbox = Sandbox::new(shell_policy());
        let o = sandbox.run("/usr/bin/id", &["-u"], None).unwrap();
        let uid: u32 = o.stdout_text().trim().parse().unwrap();
        if sandbox.protections().unprivileged_user {
            assert!(uid >= crate::identity::UID_BASE, "{uid}");
        } else {
            assert_eq!(uid, nix::unistd::geteuid().as_raw());
        }
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_not_an_outcome() {
        let err = Sandbox::new(shell_policy())
            .run("/nonexistent/kt-program", &[] as &[&str], None)
            .unwrap_err();
        assert!(matches!(err, SandboxError::Spawn { .. }), "{err}");
    }

    #[test]
    fn gpu_worker_keeps_kt_identity_and_has_no_address_space_limit() {
        let sandbox = Sandbox::new(Policy::for_gpu_worker());
        let o = sandbox
            .run("/bin/sh", &["-c", "id -u; ulimit -v"], None)
            .unwrap();
        let out = o.stdout_text();
        let mut lines = out.lines();
        assert_eq!(
            lines.next().unwrap().parse::<u32>().unwrap(),
            nix::unistd::geteuid().as_raw()
        );
        assert_eq!(lines.next().unwrap(), "unlimited");
    }
}
