//! [`Sandbox`]: runs a program under a [`Policy`], once (blocking, output captured) or long-lived (piped).

use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::resource::Resource;

use crate::capture::{Capture, OutputTail};
use crate::child::SandboxedChild;
use crate::confine::{self, Confinement, MountOp, Rlimit};
use crate::disk_quota;
use crate::environment;
use crate::error::SandboxError;
use crate::identity::RunIdentity;
use crate::outcome::{Ending, Outcome, classify};
use crate::policy::{NetworkIsolation, Policy, StderrMode, UserPolicy};
use crate::protections::{Protections, detect_protections};
use crate::view;
use crate::workdir::Workdir;

/// Runs untrusted programs under one policy. Cheap to create; every run gets a fresh work directory (unless the
/// policy names one) and, when kt is root, a fresh unprivileged uid.
#[derive(Debug, Clone)]
pub struct Sandbox {
    policy: Policy,
    machine: Protections,
}

/// Extra plumbing for [`Sandbox::spawn_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnOptions {
    /// Open a pipe whose write end the child gets as this descriptor (e.g. 3) and whose read end
    /// [`SandboxedChild::take_replies`] returns: a protocol channel that kernel `printf` on stdout cannot corrupt.
    pub reply_fd: Option<i32>,
    /// Fold stdout into the captured tail (with stderr) instead of piping it to the caller; needs
    /// `StderrMode::Capture`.
    pub stdout_to_tail: bool,
}

/// A command ready to spawn, with what must outlive the spawn.
struct Prepared {
    command: Command,
    confinement: Confinement,
    identity: Option<RunIdentity>,
    pids_enforced: bool,
}

impl Prepared {
    /// Passes the parent's descriptor `source` to the child as `target`.
    fn confinement_extra_fd(&mut self, source: std::os::fd::RawFd, target: std::os::fd::RawFd) {
        self.confinement.extra_fd = Some((source, target));
    }

    /// Installs the confinement; the command is then ready to spawn.
    fn finish(self) -> (Command, Option<RunIdentity>) {
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

/// How often a one-shot run checks its child, its deadline and its output cap.
const POLL: Duration = Duration::from_millis(5);
/// How long to wait for output pipes to drain once the program has ended.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

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
        // Not root: a process limit is the one reason to make a user namespace when no other namespace is made.
        let namespace_pids = m.user_namespace && m.pids_limit && p.processes.is_some();
        let user_namespace =
            m.user_namespace && (network_namespace || mount_namespace || namespace_pids);
        Protections {
            network_namespace,
            mount_namespace,
            pid_namespace,
            unprivileged_user,
            pids_limit: p.processes.is_some() && (unprivileged_user || namespace_pids),
            user_namespace,
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

    /// Runs `program` to completion in a fresh work directory, feeding it `stdin`, and reports how it ended.
    pub fn run<S: AsRef<OsStr>>(
        &self,
        program: impl AsRef<OsStr>,
        args: &[S],
        stdin: Option<&[u8]>,
    ) -> Result<Outcome, SandboxError> {
        let workdir = self.workdir()?;
        self.run_in(&workdir, program, args, stdin)
    }

    /// Like [`Sandbox::run`], in a work directory the caller prepared (and reads afterwards).
    pub fn run_in<S: AsRef<OsStr>>(
        &self,
        workdir: &Workdir,
        program: impl AsRef<OsStr>,
        args: &[S],
        stdin: Option<&[u8]>,
    ) -> Result<Outcome, SandboxError> {
        let program = program.as_ref();
        let mut prepared = self.prepare(workdir, program, args)?;
        prepared.command.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        prepared
            .command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let pids_enforced = prepared.pids_enforced;
        // A one-shot run blocks this thread until the program is reaped, so the parent-death signal (which follows
        // the forking thread) fires exactly when kt dies.
        prepared.confinement.die_with = Some(std::process::id() as libc::pid_t);
        let (mut command, identity) = prepared.finish();
        let start = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|source| self.spawn_error(program, source))?;
        let pid = child.id();
        let raw_pid = pid as libc::pid_t;
        crate::live::register(raw_pid, identity);
        tracing::debug!(pid, program = %program.to_string_lossy(), workdir = %workdir.path().display(), "sandboxed run started");

        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let input = input.to_vec();
            // A separate thread: a program that does not read its stdin must not block kt.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&input);
            });
        }
        let capture = Capture::start(
            child.stdout.take(),
            child.stderr.take(),
            self.policy.output_cap,
        );

        let deadline = self.policy.wall_timeout.map(|t| start + t);
        let mut forced: Option<Ending> = None;
        let mut quota_checked = start;
        loop {
            if confine::has_exited(raw_pid).map_err(|source| SandboxError::Wait { pid, source })? {
                break;
            }
            if forced.is_none() {
                if capture.overflowed() {
                    forced = Some(Ending::OutputTooLarge {
                        limit: self.policy.output_cap,
                    });
                } else if deadline.is_some_and(|d| Instant::now() >= d) {
                    forced = Some(Ending::TimedOut {
                        limit: self.policy.wall_timeout.unwrap_or_default(),
                    });
                } else if quota_checked.elapsed() >= disk_quota::CHECK_EVERY {
                    quota_checked = Instant::now();
                    forced = self.over_quota(workdir);
                }
                if forced.is_some() {
                    confine::kill_group(raw_pid);
                }
            }
            std::thread::sleep(POLL);
        }
        let elapsed = start.elapsed();
        // The leader is a zombie, so its group id cannot have been recycled: kill what it left running.
        confine::kill_group(raw_pid);
        if let Some(id) = identity {
            confine::kill_all_of_uid(id.uid, id.gid);
        }
        crate::live::forget(raw_pid);
        let reaped = confine::reap(raw_pid).map_err(|source| SandboxError::Wait { pid, source })?;
        let (stdout, stderr, overflowed) = capture.finish(DRAIN_GRACE);
        let cpu_time = Duration::from_micros(reaped.cpu_micros);
        let status = reaped.status;
        // once more at the end: a program that wrote past the quota within one interval is refused too
        let forced = forced.or_else(|| self.over_quota(workdir));
        let ending = if overflowed {
            Ending::OutputTooLarge {
                limit: self.policy.output_cap,
            }
        } else if let Some(forced) = forced {
            forced
        } else {
            let exit_code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            let signal = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
            classify(
                &self.policy,
                pids_enforced,
                exit_code,
                signal,
                cpu_time,
                &stderr,
            )
        };
        tracing::debug!(pid, ?ending, ?elapsed, ?cpu_time, "sandboxed run ended");
        Ok(Outcome {
            ending,
            stdout,
            stderr,
            elapsed,
            cpu_time,
        })
    }

    /// The ending of a run whose work directory is over the policy's disk quota, if it is.
    fn over_quota(&self, workdir: &Workdir) -> Option<Ending> {
        let limit = self.policy.disk_quota?;
        let u = disk_quota::usage(workdir.path(), limit);
        u.exceeds(limit).then_some(Ending::DiskQuotaExceeded {
            limit,
            used: u.bytes,
            entries: u.entries,
        })
    }

    /// Starts a long-lived program with piped stdin and stdout in a fresh work directory (kept as long as the
    /// child; pass absolute paths to it). Its stderr is captured (last bytes kept) or inherited per the policy. The
    /// output cap and wall timeout do not apply: the caller owns the protocol and its own watchdog.
    pub fn spawn<S: AsRef<OsStr>>(
        &self,
        program: impl AsRef<OsStr>,
        args: &[S],
    ) -> Result<SandboxedChild, SandboxError> {
        self.spawn_with(program, args, &SpawnOptions::default())
    }

    /// Like [`Sandbox::spawn`], with a reply pipe on an extra descriptor and/or stdout folded into the tail.
    pub fn spawn_with<S: AsRef<OsStr>>(
        &self,
        program: impl AsRef<OsStr>,
        args: &[S],
        options: &SpawnOptions,
    ) -> Result<SandboxedChild, SandboxError> {
        let workdir = self.workdir()?;
        let program = program.as_ref();
        let mut prepared = self.prepare(&workdir, program, args)?;
        let reply_pipe = match options.reply_fd {
            Some(target) => {
                let (read, write) =
                    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| {
                        SandboxError::Pipe {
                            pid: 0,
                            what: format!("creating the reply pipe: {e}"),
                        }
                    })?;
                prepared.confinement_extra_fd(write.as_raw_fd(), target);
                Some((read, write))
            }
            None => None,
        };
        let tail_bytes = match self.policy.stderr {
            StderrMode::Capture { tail_bytes } => Some(tail_bytes),
            StderrMode::Inherit => None,
        };
        prepared.command.stdin(Stdio::piped());
        prepared.command.stdout(Stdio::piped());
        prepared.command.stderr(if tail_bytes.is_some() {
            Stdio::piped()
        } else {
            Stdio::inherit()
        });
        let (mut command, identity) = prepared.finish();
        let mut child = command
            .spawn()
            .map_err(|source| self.spawn_error(program, source))?;
        // The parent's copy of the write end must go, or the reader would never see end-of-file.
        let replies = reply_pipe.map(|(read, write)| {
            drop(write);
            std::fs::File::from(read)
        });
        let tail = tail_bytes.map(|keep| {
            let tail = OutputTail::default();
            if let Some(stream) = child.stderr.take() {
                tail.follow(stream, keep);
            }
            if options.stdout_to_tail
                && let Some(stream) = child.stdout.take()
            {
                tail.follow(stream, keep);
            }
            tail
        });
        tracing::debug!(pid = child.id(), program = %program.to_string_lossy(), "sandboxed child spawned");
        Ok(SandboxedChild::new(child, identity, tail, replies, workdir))
    }

    fn spawn_error(&self, program: &OsStr, source: std::io::Error) -> SandboxError {
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

    fn prepare<S: AsRef<OsStr>>(
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
            let view = view::plan(
                workdir.path(),
                &p.readable_paths,
                active.mount_namespace,
                identity.is_some(),
            )?;
            if !view.ops.is_empty() {
                confinement.unshare_flags |= libc::CLONE_NEWNS;
                confinement.mounts = view.ops;
            }
            if active.pid_namespace {
                confinement.unshare_flags |= libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
                confinement.mounts.push(MountOp::Proc);
            }
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
        let mut limit = |resource, value: Option<u64>, extra: u64| {
            if let Some(v) = value {
                // Without privileges a hard limit can only be lowered: clamp to the current one rather than fail.
                let current_hard = nix::sys::resource::getrlimit(resource)
                    .map(|(_, hard)| hard)
                    .unwrap_or(libc::RLIM_INFINITY);
                confinement.rlimits.push(Rlimit {
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
        let pids_enforced = active.pids_limit;
        if pids_enforced {
            limit(Resource::RLIMIT_NPROC, p.processes, 0);
        }
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
    use std::path::Path;

    use super::*;
    use crate::outcome::Limit;

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
    fn long_lived_child_talks_over_pipes_and_kill_takes_its_whole_group() {
        use std::io::{BufRead, BufReader, Write};
        let sandbox = Sandbox::new(Policy::for_gpu_worker());
        // The shell starts a background sleeper, reports both pids, then echoes lines like a worker protocol.
        let mut child = sandbox
            .spawn(
                "/bin/sh",
                &[
                    "-c",
                    "sleep 100 & echo $$ $!; while read line; do echo \"got $line\"; done",
                ],
            )
            .unwrap();
        let mut stdout = BufReader::new(child.take_stdout().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let pids: Vec<i32> = line
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(pids[0] as u32, child.pid());
        writeln!(child.stdin().unwrap(), "ping").unwrap();
        child.stdin().unwrap().flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, "got ping\n");
        assert_eq!(child.try_wait().unwrap(), None);
        let status = child.kill().unwrap();
        assert!(!status.success());
        let gone = |pid: i32| {
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        while !gone(pids[1]) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            gone(pids[1]),
            "the background sleeper must die with its group"
        );
    }

    #[test]
    fn dropping_a_child_kills_it_and_wait_timeout_reports_a_running_child() {
        let sandbox = Sandbox::new(Policy::for_gpu_worker());
        let mut child = sandbox.spawn("/bin/sleep", &["100"]).unwrap();
        let pid = child.pid();
        assert_eq!(child.wait_timeout(Duration::from_millis(50)).unwrap(), None);
        drop(child);
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "dropped child {pid} must be killed and reaped"
        );
    }

    #[test]
    fn reply_pipe_on_fd_3_carries_the_protocol_while_stdout_goes_to_the_tail() {
        use std::io::Read;
        let sandbox = Sandbox::new(Policy::for_gpu_worker());
        let options = SpawnOptions {
            reply_fd: Some(3),
            stdout_to_tail: true,
        };
        let script =
            "echo kernel-printf-noise; echo cuda-warning >&2; echo reply >&3; exec 3>&-; read _";
        let mut child = sandbox
            .spawn_with("/bin/sh", &["-c", script], &options)
            .unwrap();
        let mut replies = child.take_replies().unwrap();
        let mut text = String::new();
        replies.read_to_string(&mut text).unwrap();
        assert_eq!(
            text, "reply\n",
            "end-of-file once the child closed fd 3: the parent holds no write end"
        );
        assert!(child.stdout().is_none(), "stdout is folded into the tail");
        let deadline = Instant::now() + Duration::from_secs(2);
        let tail = loop {
            let tail = String::from_utf8_lossy(&child.stderr_tail()).into_owned();
            if (tail.contains("kernel-printf-noise") && tail.contains("cuda-warning"))
                || Instant::now() > deadline
            {
                break tail;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(
            tail.contains("kernel-printf-noise") && tail.contains("cuda-warning"),
            "{tail:?}"
        );
        child.kill().unwrap();
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
