//! A one-shot run ([`Sandbox::run`], [`Sandbox::run_in`]): the program is started, watched until it ends or a
//! limit stops it (wall time, output cap, disk quota), reaped with what it left running, and its ending
//! classified.

use std::ffi::OsStr;
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::capture::Capture;
use crate::confine;
use crate::disk_quota;
use crate::error::SandboxError;
use crate::identity::RunIdentity;
use crate::memory_cgroup::{RunCgroup, memory_cgroup};
use crate::outcome::{Ending, Outcome, classify};
use crate::sandbox::Sandbox;
use crate::workdir::Workdir;

/// How often a one-shot run checks its child, its deadline and its output cap.
const POLL: Duration = Duration::from_millis(5);
/// How long to wait for output pipes to drain once the program has ended.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

impl Sandbox {
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
        let started = self.start(workdir, program, args, stdin)?;
        let tree = crate::tree::Tree::of(started.raw_pid(), started.identity.map(|id| id.uid));
        let forced = self.watch(&started, workdir, &tree)?;
        let elapsed = started.start.elapsed();
        let (pid, raw_pid) = (started.pid, started.raw_pid());
        // The leader is a zombie, so its group id cannot have been recycled: kill what it left running.
        confine::kill_group(raw_pid);
        if let Some(id) = started.identity {
            confine::kill_all_of_uid(id.uid, id.gid);
        }
        crate::live::forget(raw_pid);
        let reaped = confine::reap(raw_pid).map_err(|source| SandboxError::Wait { pid, source })?;
        let (stdout, stderr, overflowed) = started.capture.finish(DRAIN_GRACE);
        let cpu_time = Duration::from_micros(reaped.cpu_micros);
        let over_memory = started.cgroup.as_ref().is_some_and(RunCgroup::oom_killed);
        // once more at the end: a program that wrote past the quota within one interval is refused too
        let forced = forced
            .or_else(|| {
                over_memory.then_some(Ending::KilledByLimit {
                    which: crate::outcome::Limit::RunMemory,
                })
            })
            .or_else(|| self.over_quota(workdir));
        let ending = match (overflowed, forced) {
            (true, _) => Ending::OutputTooLarge {
                limit: self.policy.output_cap,
            },
            (false, Some(forced)) => forced,
            (false, None) => {
                self.ending_of(reaped.status, started.pids_enforced, cpu_time, &stderr)
            }
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

    /// Spawns the confined program with its stdin fed from a thread and its output captured.
    fn start<S: AsRef<OsStr>>(
        &self,
        workdir: &Workdir,
        program: &OsStr,
        args: &[S],
        stdin: Option<&[u8]>,
    ) -> Result<Started, SandboxError> {
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
        let cgroup = self.run_cgroup();
        prepared.confinement.cgroup_procs = cgroup.as_ref().map(RunCgroup::procs);
        // A one-shot run blocks this thread until the program is reaped, so the parent-death signal (which follows
        // the forking thread) fires exactly when kt dies.
        prepared.confinement.die_with = Some(std::process::id() as libc::pid_t);
        let (mut command, identity) = prepared.finish();
        let start = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|source| self.spawn_error(program, source))?;
        let pid = child.id();
        crate::live::register(pid as libc::pid_t, identity);
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
        Ok(Started {
            pid,
            identity,
            cgroup,
            pids_enforced,
            start,
            capture,
        })
    }

    /// The run's own memory cgroup, where this machine gives runs one (`memory_cgroup.rs`) and the policy caps
    /// memory; otherwise the measured cap of [`Sandbox::over_run_limits`] is the only one.
    fn run_cgroup(&self) -> Option<RunCgroup> {
        let limit = self.policy.memory?;
        if !self.protections().memory_cgroup {
            return None;
        }
        let base = memory_cgroup().ok()?;
        RunCgroup::create(base, limit)
            .inspect_err(|e| {
                tracing::warn!(base = %base.display(), error = %e, "no cgroup for this run: its memory is only measured")
            })
            .ok()
    }

    /// Waits for the program to end, killing its group at the first limit it passes (output cap, wall time,
    /// disk quota); returns that limit's ending, if one was passed.
    fn watch(
        &self,
        started: &Started,
        workdir: &Workdir,
        tree: &crate::tree::Tree,
    ) -> Result<Option<Ending>, SandboxError> {
        let (pid, raw_pid) = (started.pid, started.raw_pid());
        let deadline = self.policy.wall_timeout.map(|t| started.start + t);
        let mut forced: Option<Ending> = None;
        let mut quota_checked = started.start;
        loop {
            if confine::has_exited(raw_pid).map_err(|source| SandboxError::Wait { pid, source })? {
                return Ok(forced);
            }
            if forced.is_none() {
                if started.capture.overflowed() {
                    forced = Some(Ending::OutputTooLarge {
                        limit: self.policy.output_cap,
                    });
                } else if deadline.is_some_and(|d| Instant::now() >= d) {
                    forced = Some(Ending::TimedOut {
                        limit: self.policy.wall_timeout.unwrap_or_default(),
                    });
                } else if quota_checked.elapsed() >= disk_quota::CHECK_EVERY {
                    quota_checked = Instant::now();
                    forced = self.over_run_limits(workdir, tree);
                }
                if forced.is_some() {
                    confine::kill_group(raw_pid);
                }
            }
            std::thread::sleep(POLL);
        }
    }

    /// How a program that no limit of the watch stopped ended, from its wait status.
    fn ending_of(
        &self,
        status: i32,
        pids_enforced: bool,
        cpu_time: Duration,
        stderr: &[u8],
    ) -> Ending {
        let exit_code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        let signal = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
        classify(
            &self.policy,
            pids_enforced,
            exit_code,
            signal,
            cpu_time,
            stderr,
        )
    }

    /// The ending of a run whose processes hold more memory than the policy's `memory`, or whose work directory
    /// and deleted-but-open files take more than its disk quota, if one of them does.
    fn over_run_limits(&self, workdir: &Workdir, tree: &crate::tree::Tree) -> Option<Ending> {
        if self.policy.memory.is_none() && self.policy.disk_quota.is_none() {
            return None;
        }
        let held = tree.usage();
        if self.policy.memory.is_some_and(|m| held.memory > m) {
            tracing::debug!(?held, "the run's processes passed the memory limit");
            return Some(Ending::KilledByLimit {
                which: crate::outcome::Limit::RunMemory,
            });
        }
        let limit = self.policy.disk_quota?;
        let u = disk_quota::usage(workdir.path(), limit);
        let used = u.bytes.saturating_add(held.unlinked);
        (used > limit || u.exceeds(limit)).then_some(Ending::DiskQuotaExceeded {
            limit,
            used,
            entries: u.entries,
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
}

/// A one-shot program that runs: its process, what the run gave it, and its captured output.
struct Started {
    pid: u32,
    identity: Option<RunIdentity>,
    /// Removed (after the run's processes are gone) when the run is over.
    cgroup: Option<RunCgroup>,
    pids_enforced: bool,
    start: Instant,
    capture: Capture,
}

impl Started {
    fn raw_pid(&self) -> libc::pid_t {
        self.pid as libc::pid_t
    }
}
