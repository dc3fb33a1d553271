//! Starting and killing the worker process, through kt-sandbox's policy for the GPU worker (no address-space
//! limit, since CUDA reserves huge virtual ranges; CUDA's and kt's variables kept, credentials scrubbed; its
//! own process group, killed as a whole). The protocol runs over the child's stdin (requests) and a reply
//! pipe on fd 3: kernel `printf` writes to the process's stdout, so stdout cannot carry frames; stdout and
//! stderr are kept as a tail for error reports.

use std::fs::File;
use std::path::PathBuf;
use std::process::ChildStdin;

use kt_sandbox::{Policy, Sandbox, SandboxedChild, SpawnOptions};

use crate::error::TunerError;

/// The fd on which the worker writes its replies.
pub const PROTOCOL_FD: i32 = 3;
/// Set in the worker's environment so `serve` knows the protocol fd was set up.
pub const PROTOCOL_ENV: &str = "KT_TUNER_PROTOCOL_FD";

/// How to start a worker: kt's own binary in its hidden mode, or a test executable.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The worker runs under a profiler (Nsight Compute, through `kt __profile-launch`): it keeps the host's
    /// network namespace and kt's whole environment. ncu's library inside the worker is configured through
    /// environment variables that the usual pass list drops, and reports to the ncu front end over a local
    /// socket that a network namespace cuts; without both the worker dies with SIGSEGV. GPU code has no
    /// network to reach, so this costs the worker a defence in depth, not its containment.
    pub under_profiler: bool,
}

impl WorkerCommand {
    /// `kt __tuner-worker`: the running executable, or the command a host embedding kt set
    /// (`self_command`).
    pub fn current_exe() -> Result<Self, TunerError> {
        let (program, args) = crate::host::self_command::subcommand("__tuner-worker")?;
        Ok(WorkerCommand {
            program,
            args,
            // the fake device of kt's CPU tests, asked for in this process's environment, is the worker's
            // (whose environment kt scrubs)
            env: crate::worker::fake_mode_in_env()
                .map(|mode| vec![(crate::worker::FAKE_ENV.to_string(), mode)])
                .unwrap_or_default(),
            under_profiler: false,
        })
    }
}

pub struct WorkerProcess {
    pub child: SandboxedChild,
    pub stdin: ChildStdin,
    pub replies: File,
}

impl WorkerProcess {
    pub fn spawn(cmd: &WorkerCommand) -> Result<Self, TunerError> {
        // Eager module loading: a lazily loaded kernel would pay for its loading inside its first launch,
        // which is timed (the verifying run counts as the first sample).
        let mut policy = Policy::for_gpu_worker()
            .with_env(PROTOCOL_ENV, PROTOCOL_FD.to_string())
            .with_env("CUDA_MODULE_LOADING", "EAGER");
        for (k, v) in &cmd.env {
            policy = policy.with_env(k, v);
        }
        if cmd.under_profiler {
            policy.network = kt_sandbox::NetworkIsolation::Off;
            policy.env.pass.push("*".into());
        }
        let options = SpawnOptions {
            reply_fd: Some(PROTOCOL_FD),
            stdout_to_tail: true,
        };
        let mut child = Sandbox::new(policy)
            .spawn_with(&cmd.program, &cmd.args, &options)
            .map_err(|e| {
                TunerError::Worker(format!("cannot start {}: {e}", cmd.program.display()))
            })?;
        let stdin = child
            .take_stdin()
            .ok_or_else(|| TunerError::Worker("worker has no stdin".into()))?;
        let replies = child
            .take_replies()
            .ok_or_else(|| TunerError::Worker("worker has no reply pipe".into()))?;
        Ok(WorkerProcess {
            child,
            stdin,
            replies,
        })
    }

    /// Kills the whole process group and reaps the child.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
    }

    /// The exit status, if the worker has ended.
    pub fn exit_status(&mut self) -> Option<String> {
        self.child.try_wait().ok().flatten().map(|s| s.to_string())
    }

    /// The last few KB of the worker's stdout/stderr (kernel printf, CUDA messages), for error reports.
    pub fn tail_text(&self) -> String {
        let tail = self.child.stderr_tail();
        let start = tail.len().saturating_sub(4096);
        String::from_utf8_lossy(&tail[start..]).trim().to_string()
    }
}
