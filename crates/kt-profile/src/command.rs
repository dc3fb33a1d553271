//! The ncu command line that profiles exactly one launch of one kernel in a child process, and running it.
//!
//! `ncu --target-processes all --kernel-name regex:^NAME$ --launch-skip K --launch-count 1 --csv --page raw
//! --print-units base --metrics <the fixed set> --clock-control none --log-file <file> PROGRAM ARGS…`: every
//! process the program starts is followed, the first K launches of the kernel are let through, the next one
//! is replayed for the metrics, and the report (with ncu's own messages) goes to the log file so the
//! program's output cannot mix with it.
//!
//! `--clock-control none`: ncu leaves the GPU's clocks alone, so a profile never changes the clocks under
//! kernels kt's tuner may be timing in another process; the summary's figures are shares of peak, stall
//! ratios, bytes and hit rates, which do not depend on the clock.

use crate::error::ProfileError;
use crate::locate::NcuPath;
use crate::metrics::METRICS;
use crate::profile::KernelProfile;
pub use crate::running::RunningProfile;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
#[cfg(test)]
use std::time::Instant;

/// One kernel launch to profile: which kernel, in which program.
#[derive(Debug, Clone)]
pub struct ProfileCommand {
    pub ncu: NcuPath,
    /// The kernel's function name (not mangled, no parameters), matched exactly.
    pub kernel: String,
    /// Launches of that kernel to let through before the profiled one (warm-up).
    pub launch_skip: u64,
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The metrics collected: [`METRICS`] unless [`ProfileCommand::metrics`] chose others.
    pub metrics: &'static [&'static str],
}

impl ProfileCommand {
    pub fn new(ncu: NcuPath, kernel: impl Into<String>, program: impl Into<PathBuf>) -> Self {
        Self {
            ncu,
            kernel: kernel.into(),
            launch_skip: 0,
            program: program.into(),
            args: Vec::new(),
            metrics: METRICS,
        }
    }

    pub fn args<I, A>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn launch_skip(mut self, launches: u64) -> Self {
        self.launch_skip = launches;
        self
    }

    /// Collects `metrics` instead of [`METRICS`] (e.g. [`crate::metrics::SUMMARY_METRICS`]: only what the
    /// summary reads, in fewer replays).
    pub fn metrics(mut self, metrics: &'static [&'static str]) -> Self {
        self.metrics = metrics;
        self
    }

    /// ncu's kernel filter: the exact name, regex metacharacters escaped (`<`, `>` and `:` stay literal:
    /// some regex dialects read `\<` as a word boundary).
    pub fn kernel_filter(&self) -> String {
        let mut escaped = String::with_capacity(self.kernel.len() + 2);
        for c in self.kernel.chars() {
            if ".^$|?*+()[]{}\\".contains(c) {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        format!("regex:^{escaped}$")
    }

    /// ncu's arguments that pick the launch to profile.
    fn filter_args(&self) -> Vec<String> {
        vec![
            "--kernel-name".into(),
            self.kernel_filter(),
            "--launch-skip".into(),
            self.launch_skip.to_string(),
            "--launch-count".into(),
            "1".into(),
        ]
    }

    /// ncu's arguments, up to and including the program and its arguments.
    pub fn ncu_args(&self, log_file: &Path) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["--target-processes".into(), "all".into()];
        a.extend(self.filter_args().into_iter().map(OsString::from));
        a.extend(
            [
                "--csv",
                "--page",
                "raw",
                "--print-units",
                "base",
                "--metrics",
                &self.metrics.join(","),
                "--clock-control",
                "none",
                "--log-file",
            ]
            .iter()
            .map(OsString::from),
        );
        a.push(log_file.as_os_str().to_owned());
        a.push(self.program.as_os_str().to_owned());
        a.extend(self.args.iter().cloned());
        a
    }

    /// Runs ncu on the program and parses the one profiled launch. The program's own output is kept
    /// apart from the report; `timeout` bounds the whole run (ncu replays the kernel a few dozen times).
    pub fn run(&self, timeout: Duration) -> Result<KernelProfile, ProfileError> {
        self.spawn(false)?.finish(None, timeout)
    }

    /// Starts ncu on the program and returns at once. With `piped_input`, the program's standard input
    /// is a pipe that [`RunningProfile::finish`] writes to: a program that starts (ncu, its process,
    /// its CUDA context) and then waits there for what to launch lets that start-up overlap other work.
    pub fn spawn(&self, piped_input: bool) -> Result<RunningProfile, ProfileError> {
        let dir = tempfile::tempdir().map_err(|source| ProfileError::Io {
            what: "make a temporary directory for ncu's report".into(),
            source,
        })?;
        let log = dir.path().join("ncu.csv");
        let out = dir.path().join("program.out");
        let program_out = File::create(&out).map_err(|source| ProfileError::Io {
            what: format!("create {}", out.display()),
            source,
        })?;
        let program_err = program_out.try_clone().map_err(|source| ProfileError::Io {
            what: format!("share {}", out.display()),
            source,
        })?;
        let mut cmd = Command::new(self.ncu.path());
        cmd.args(self.ncu_args(&log))
            .stdin(if piped_input {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(program_out)
            .stderr(program_err);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        tracing::debug!(
            kernel = %self.kernel,
            command = %format!("{} {}", self.ncu.path().display(), self.ncu_args(&log).iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")),
            piped_input,
            "starting ncu"
        );
        let child = cmd.spawn().map_err(|source| ProfileError::Spawn {
            path: self.ncu.path().to_path_buf(),
            source,
        })?;
        Ok(RunningProfile::new(
            self.kernel.clone(),
            self.kernel_filter(),
            child,
            dir,
            log,
            out,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd() -> ProfileCommand {
        ProfileCommand::new(
            NcuPath("/usr/local/cuda/bin/ncu".into()),
            "matmul",
            "./bench",
        )
        .args(["--size", "1024"])
    }

    #[test]
    fn the_command_profiles_exactly_one_launch_of_one_kernel_in_any_child_process() {
        let args: Vec<String> = cmd()
            .launch_skip(2)
            .ncu_args(Path::new("/tmp/r.csv"))
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = args.join(" ");
        assert!(line.starts_with("--target-processes all --kernel-name regex:^matmul$ --launch-skip 2 --launch-count 1 --csv --page raw --print-units base --metrics "), "{line}");
        assert!(line.contains(" --clock-control none --log-file "), "{line}");
        assert!(
            line.ends_with("--log-file /tmp/r.csv ./bench --size 1024"),
            "{line}"
        );
        let metrics = &args[args.iter().position(|a| a == "--metrics").unwrap() + 1];
        assert_eq!(metrics.split(',').count(), METRICS.len());
    }

    #[test]
    fn kernel_names_are_matched_exactly_with_regex_characters_escaped() {
        let mut c = cmd();
        assert_eq!(c.kernel_filter(), "regex:^matmul$");
        c.kernel = "ns::gemm<128>".into();
        assert_eq!(c.kernel_filter(), "regex:^ns::gemm<128>$");
        c.kernel = "a.b(c)".into();
        assert_eq!(c.kernel_filter(), "regex:^a\\.b\\(c\\)$");
    }

    #[test]
    fn restricted_counters_say_how_to_allow_them() {
        let c = cmd();
        let err = crate::ncu_log::interpret(
            &c.kernel,
            &c.kernel_filter(),
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission",
            "",
        )
        .unwrap_err();
        assert!(matches!(err, ProfileError::CountersRestricted));
        assert!(
            err.to_string()
                .contains("NVreg_RestrictProfilingToAdminUsers=0")
        );
    }

    #[test]
    fn a_kernel_that_never_ran_is_named_in_the_error() {
        let log = "==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n";
        let c = cmd();
        let err = crate::ncu_log::interpret(&c.kernel, &c.kernel_filter(), log, log).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("`matmul`") && msg.contains("regex:^matmul$"),
            "{msg}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fake_ncu_that_writes_a_report_is_run_and_parsed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("ncu");
        // Writes a one-launch report to the file after --log-file, like ncu does.
        let script = "#!/bin/sh\nwhile [ \"$1\" != \"--log-file\" ]; do shift; done\n\
            printf '\"ID\",\"Kernel Name\",\"launch__registers_per_thread\"\\n\"\",\"\",\"register/thread\"\\n\"0\",\"matmul\",\"40\"\\n' > \"$2\"\n\
            echo program output\n";
        std::fs::write(&fake, script).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let profile = ProfileCommand::new(NcuPath(fake), "matmul", "/bin/true")
            .run(Duration::from_secs(20))
            .unwrap();
        assert_eq!(profile.kernel, "matmul");
        assert_eq!(profile.occupancy.registers_per_thread, Some(40.0));
    }

    #[cfg(unix)]
    #[test]
    fn a_hung_profile_is_stopped_at_the_timeout() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("ncu");
        std::fs::write(&fake, "#!/bin/sh\nsleep 30\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let t0 = Instant::now();
        let err = ProfileCommand::new(NcuPath(fake), "k", "/bin/true")
            .run(Duration::from_millis(300))
            .unwrap_err();
        assert!(matches!(err, ProfileError::Timeout { .. }), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    // Started early, finished later (running.rs).
    /// A fake ncu that runs its program (after `--log-file FILE`) and then writes a one-launch report
    /// naming the kernel the program printed.
    #[cfg(unix)]
    fn fake_ncu(dir: &std::path::Path) -> NcuPath {
        use std::os::unix::fs::PermissionsExt;
        let fake = dir.join("ncu");
        let script = "#!/bin/sh\nwhile [ \"$1\" != \"--log-file\" ]; do shift; done\nlog=$2; shift 2\n\
            name=$(\"$@\")\n\
            printf '\"ID\",\"Kernel Name\",\"launch__registers_per_thread\"\\n\"\",\"\",\"register/thread\"\\n\"0\",\"%s\",\"40\"\\n' \"$name\" > \"$log\"\n";
        std::fs::write(&fake, script).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        NcuPath(fake)
    }

    #[cfg(unix)]
    #[test]
    fn a_program_waiting_for_its_input_is_profiled_once_the_input_comes() {
        let dir = tempfile::tempdir().unwrap();
        // the program reads one line and prints it: what it launches is decided by its input
        let mut running = ProfileCommand::new(fake_ncu(dir.path()), "matmul", "/bin/sh")
            .args(["-c", "read line; echo $line"])
            .spawn(true)
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(running.is_running(), "it waits for its input");
        let profile = running
            .finish(Some(b"matmul\n"), Duration::from_secs(20))
            .unwrap();
        assert_eq!(profile.kernel, "matmul");
    }

    #[cfg(unix)]
    #[test]
    fn dropping_a_waiting_run_stops_it() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let running = ProfileCommand::new(fake_ncu(dir.path()), "k", "/bin/sh")
            .args([
                "-c".to_string(),
                format!("sleep 2; touch {}", marker.display()),
            ])
            .spawn(true)
            .unwrap();
        drop(running);
        std::thread::sleep(Duration::from_millis(2500));
        assert!(!marker.exists(), "the program was killed with ncu");
    }
}
