//! Starting and stopping the `kt` processes that run cells. The boundary to the pipeline is the command
//! line: `kt transform FILE --strategy S --llm M --out <cell dir> [--kernel K] [--<setting> V]...` for a new
//! cell and `kt resume <run dir>` for a half-finished one, with `CUDA_VISIBLE_DEVICES` set to the worker's GPU
//! and `--seed` the cell's seed. Each child runs in its own process group so that a stop reaches its own
//! children too (the GPU worker, Python generators), and so that a Ctrl-C in the terminal reaches only the
//! coordinator, which then stops the cells in order.

use std::fs::OpenOptions;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, killpg, sigaction};
use nix::unistd::Pid;

use crate::cell::Cell;
use crate::error::ExperimentError;

/// The program that runs cells: the `kt` binary (by default the running executable), optionally with
/// leading arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct KtBinary {
    pub program: PathBuf,
    pub prefix_args: Vec<String>,
}

impl KtBinary {
    pub fn new(program: impl Into<PathBuf>) -> KtBinary {
        KtBinary {
            program: program.into(),
            prefix_args: Vec::new(),
        }
    }

    /// The running executable: when `kt experiment run` runs, cells run the very same `kt`.
    pub fn current() -> Result<KtBinary, ExperimentError> {
        let exe = std::env::current_exe()
            .map_err(|e| ExperimentError::io("<current executable>", "locating kt", e))?;
        Ok(KtBinary::new(exe))
    }

    /// The `kt transform` command of a new cell.
    pub fn transform(&self, cell: &Cell, root: &Path, cell_dir: &Path) -> Command {
        let mut cmd = self.base();
        cmd.arg("transform").arg(root.join(&cell.kernel_file));
        cmd.arg("--strategy").arg(&cell.strategy);
        cmd.arg("--llm").arg(cell_model(cell, root));
        cmd.arg("--out").arg(cell_dir);
        if let Some(k) = &cell.kernel_choice {
            cmd.arg("--kernel").arg(k);
        }
        for (key, value) in &cell.settings {
            cmd.arg(format!("--{key}")).arg(value.to_string());
        }
        // An explicit flag, not KT_SEED: an environment variable left in the coordinator's shell must not
        // decide a cell's seed, and the command in the cell's log says everything the cell ran with.
        cmd.arg("--seed").arg(cell.seed.to_string());
        cmd
    }

    /// The `kt resume` command of a half-finished cell. The model is passed again: `kt resume` otherwise
    /// takes the user's configured LLM for the calls not made yet, and a cell must stay on its own model.
    pub fn resume(&self, cell: &Cell, root: &Path, run_dir: &Path) -> Command {
        let mut cmd = self.base();
        cmd.arg("resume").arg(run_dir);
        cmd.arg("--llm").arg(cell_model(cell, root));
        // No seed here: `kt resume` takes the one in the run's run.json (written by `kt transform --seed`).
        cmd
    }

    fn base(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.prefix_args);
        // Output goes to a log file: no terminal colour codes in it.
        cmd.env("NO_COLOR", "1");
        cmd
    }
}

/// The `--llm` argument of a cell: `{kernel}` replaced by the kernel file's stem, file paths made absolute.
pub fn cell_model(cell: &Cell, root: &Path) -> String {
    let stem = Path::new(&cell.kernel_file)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(&cell.kernel);
    resolve_model(&cell.model.replace("{kernel}", stem), root)
}

/// File-based providers name a path relative to the design's root; the child runs elsewhere, so the path is
/// made absolute. Other specs pass through.
pub fn resolve_model(spec: &str, root: &Path) -> String {
    match spec.split_once(':') {
        Some((provider @ ("replay" | "scripted" | "manual"), path))
            if !Path::new(path).is_absolute() =>
        {
            format!("{provider}:{}", root.join(path).display())
        }
        _ => spec.to_string(),
    }
}

/// A started cell process.
#[derive(Debug)]
pub struct CellProcess {
    child: Child,
    cell: String,
    pub log: PathBuf,
}

impl CellProcess {
    /// Starts `cmd` with the given GPU, output appended to `log`, in a new process group.
    pub fn spawn(
        mut cmd: Command,
        cell: &str,
        gpu: Option<&str>,
        log: &Path,
    ) -> Result<CellProcess, ExperimentError> {
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| ExperimentError::io(log, "opening the cell log", e))?;
        let err = out
            .try_clone()
            .map_err(|e| ExperimentError::io(log, "opening the cell log", e))?;
        if let Some(gpu) = gpu {
            cmd.env("CUDA_VISIBLE_DEVICES", gpu);
        }
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        // A coordinator started with SIGINT ignored (nohup, `cmd &` in a script) would pass that on, and a
        // child cannot always undo it (bash cannot trap a signal ignored at entry), so the graceful stop would
        // degrade to a kill. Restore the default dispositions in the child.
        // SAFETY: between fork and exec only async-signal-safe calls are allowed; sigaction is one, and the
        // closure touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
                for signal in [Signal::SIGINT, Signal::SIGTERM] {
                    sigaction(signal, &default).map_err(std::io::Error::from)?;
                }
                Ok(())
            });
        }
        let program = PathBuf::from(cmd.get_program());
        let child = cmd.spawn().map_err(|source| ExperimentError::Spawn {
            program,
            cell: cell.to_string(),
            source,
        })?;
        Ok(CellProcess {
            child,
            cell: cell.to_string(),
            log: log.to_path_buf(),
        })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The exit status when the process has ended.
    pub fn try_wait(&mut self) -> Result<Option<std::process::ExitStatus>, ExperimentError> {
        self.child.try_wait().map_err(|e| ExperimentError::Signal {
            pid: pid_of(self.child.id()),
            cell: self.cell.clone(),
            detail: format!("waiting for it: {e}"),
        })
    }

    /// Stops the cell: SIGINT to its process group (a kt run checkpoints and exits as `interrupted`), then
    /// SIGKILL if it is still alive after `grace` (or at once when `immediate`). Returns its exit status.
    pub fn stop(
        &mut self,
        grace: Duration,
        immediate: bool,
    ) -> Result<std::process::ExitStatus, ExperimentError> {
        if !immediate {
            self.signal(Signal::SIGINT)?;
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline {
                if let Some(status) = self.try_wait()? {
                    return Ok(status);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            tracing::warn!(cell = %self.cell, "did not stop within {grace:?} of SIGINT; killing it");
        }
        self.signal(Signal::SIGKILL)?;
        self.child.wait().map_err(|e| ExperimentError::Signal {
            pid: pid_of(self.child.id()),
            cell: self.cell.clone(),
            detail: format!("waiting for it after SIGKILL: {e}"),
        })
    }

    fn signal(&self, signal: Signal) -> Result<(), ExperimentError> {
        match killpg(Pid::from_raw(pid_of(self.child.id())), signal) {
            // The group is already gone: nothing left to stop.
            Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
            Err(e) => Err(ExperimentError::Signal {
                pid: pid_of(self.child.id()),
                cell: self.cell.clone(),
                detail: e.to_string(),
            }),
        }
    }
}

fn pid_of(id: u32) -> i32 {
    i32::try_from(id).unwrap_or(i32::MAX)
}

/// The last `lines` lines of a log file, for error messages.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::budget::Budget;
    use crate::cell::CellId;
    use crate::settings::SettingValue;

    #[test]
    fn transform_command_carries_every_setting_and_absolute_provider_paths() {
        let mut settings = BTreeMap::new();
        settings.insert("replan".to_string(), SettingValue::Int(3));
        let cell = Cell {
            id: CellId("c".into()),
            studies: vec![],
            kernel: "k2".into(),
            kernel_file: "naive-kernels/multi.cu".into(),
            kernel_choice: Some("k2".into()),
            strategy: "autonomous".into(),
            grid: BTreeMap::new(),
            settings,
            model: "scripted:experiments/s.toml".into(),
            repeat: 0,
            seed: 7,
            budget: Budget::default(),
        };
        let cmd = KtBinary::new("/bin/kt").transform(
            &cell,
            Path::new("/repo"),
            Path::new("/exp/cells/c"),
        );
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "transform",
                "/repo/naive-kernels/multi.cu",
                "--strategy",
                "autonomous",
                "--llm",
                "scripted:/repo/experiments/s.toml",
                "--out",
                "/exp/cells/c",
                "--kernel",
                "k2",
                "--replan",
                "3",
                "--seed",
                "7"
            ]
        );
        assert_eq!(
            resolve_model("openai:gpt-4.1", Path::new("/repo")),
            "openai:gpt-4.1"
        );

        let per_kernel = Cell {
            model: "scripted:answers/{kernel}.toml".into(),
            ..cell
        };
        let cmd = KtBinary::new("/bin/kt").transform(
            &per_kernel,
            Path::new("/repo"),
            Path::new("/exp/cells/c"),
        );
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            args.contains(&"scripted:/repo/answers/multi.toml".to_string()),
            "{args:?}"
        );
    }

    #[test]
    fn a_process_ignoring_sigint_is_killed_after_the_grace_period() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("bash");
        cmd.args(["-c", "trap '' INT; sleep 30"]);
        let mut p = CellProcess::spawn(cmd, "c", None, &dir.path().join("log")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let start = Instant::now();
        let status = p.stop(Duration::from_millis(300), false).unwrap();
        assert!(!status.success());
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
