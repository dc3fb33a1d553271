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

/// Whether this process was started by a CUDA tool that injects its library into every process it starts
/// (`ncu kt tune ...`, `compute-sanitizer kt ...`, `nsys profile kt ...`, `ncu python3 script.py` with kt's
/// module). The worker must then run as under kt's own profiler (`WorkerCommand::under_profiler`), or it
/// dies with SIGSEGV. What the tools set (seen under Nsight Compute 2025.3 and compute-sanitizer of CUDA
/// 13): their process tracker's configuration, `NV_NSIGHT_INJECTION_*` / `NV_SANITIZER_INJECTION_*`
/// (a Unix socket transport), and for Nsight Systems `CUDA_INJECTION64_PATH`.
pub fn launched_under_cuda_tool(env: impl IntoIterator<Item = (String, String)>) -> bool {
    env.into_iter().any(|(name, value)| {
        name == "NVIDIA-PROCESS-TRACKING-CONFIGURATION"
            || name.starts_with("NV_NSIGHT_INJECTION_")
            || name.starts_with("NV_SANITIZER_INJECTION_")
            || name == "NV_TPS_LAUNCH_TOKEN"
            || (name == "CUDA_INJECTION64_PATH" && !value.trim().is_empty())
            || (name == "LD_PRELOAD" && value.contains("TreeLauncher"))
    })
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
        let under_profiler = cmd.under_profiler || launched_under_cuda_tool(std::env::vars());
        if under_profiler && !cmd.under_profiler {
            tracing::info!(
                "kt runs under a CUDA tool (Nsight Compute or Systems, compute-sanitizer): its GPU worker keeps \
                 the environment and the network that the tool's library needs"
            );
        }
        if under_profiler {
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

#[cfg(test)]
mod tests {
    use super::launched_under_cuda_tool;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_cuda_tools_injected_library_is_seen_in_the_environment() {
        // as `ncu env` and `compute-sanitizer env` print them (CUDA 13)
        assert!(launched_under_cuda_tool(env(&[
            ("PATH", "/usr/bin"),
            ("NV_NSIGHT_INJECTION_TRANSPORT_TYPE", "uds")
        ])));
        assert!(launched_under_cuda_tool(env(&[(
            "NV_SANITIZER_INJECTION_PORT_BASE",
            "49152"
        )])));
        assert!(launched_under_cuda_tool(env(&[
            (
                "NVIDIA-PROCESS-TRACKING-FILTER",
                "exclude-tree:nvidia-modprobe"
            ),
            (
                "NVIDIA-PROCESS-TRACKING-CONFIGURATION",
                "blocking-rpc-events:\n  - AfterExit"
            )
        ])));
        assert!(launched_under_cuda_tool(env(&[(
            "CUDA_INJECTION64_PATH",
            "/opt/nvidia/nsight-compute/target/linux-desktop-glibc_2_11_3-x64/libTreeLauncherTargetInjection.so"
        )])));
        assert!(launched_under_cuda_tool(env(&[(
            "LD_PRELOAD",
            "/usr/lib/libfoo.so:/opt/ncu/libTreeLauncherPlaceholder.so"
        )])));
    }

    #[test]
    fn an_ordinary_environment_is_not_a_tools() {
        assert!(!launched_under_cuda_tool(env(&[
            ("PATH", "/usr/bin"),
            ("LD_PRELOAD", "/usr/lib/libjemalloc.so"),
            ("CUDA_INJECTION64_PATH", ""),
            ("NV_CUDA_LIB_VERSION", "13.0.2-1"),
            ("NVIDIA_VISIBLE_DEVICES", "all"),
        ])));
    }
}
