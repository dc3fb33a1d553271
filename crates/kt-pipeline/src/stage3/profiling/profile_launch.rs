//! The program Nsight Compute watches when Stage 3 profiles a kernel: `kt __profile-launch` launches one
//! configuration of one kernel a few times on one test's inputs through kt-tuner's own compile, upload and
//! launch path, and exits. [`ProfileLaunch`] is both what that command runs and the command line that asks
//! for it, so the two cannot drift apart.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kt_tuner::session::{Tuner, TunerConfig};
use kt_tuner::{Config, Geometry, ParamSpec, TestSet, TunableParam};
use serde::{Deserialize, Serialize};

use crate::error::PipelineError;
use crate::stage3::backend::tuning_backend::BackendError;

/// One configuration of one kernel on one test, to be launched under a profiler. As JSON it is what a
/// standby launch ([`run_standby`]) reads on its standard input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileLaunch {
    /// The kernel's device code (what the tuner compiles).
    pub kernel_file: PathBuf,
    /// The kernel's function name.
    pub kernel: String,
    /// The configuration: every tunable parameter's value.
    pub params: BTreeMap<String, i64>,
    /// Problem size, grid divisors and dynamic shared memory.
    pub geometry: Geometry,
    /// One test directory (`tests/<id>`, with its manifest.json).
    pub test: PathBuf,
    /// Directories searched for the kernel's own headers.
    pub include: Vec<PathBuf>,
    /// The tuner's cache (compiled modules), shared with the run's own tuning.
    pub cache_dir: Option<PathBuf>,
}

fn failed(what: &str, e: impl std::fmt::Display) -> PipelineError {
    PipelineError::Tuning(BackendError::Failed {
        detail: format!("{what}: {e}"),
    })
}

impl ProfileLaunch {
    /// The arguments of `kt` that run this launch (`__profile-launch …`).
    pub fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec!["__profile-launch".into(), "--kernel-file".into()];
        a.push(self.kernel_file.clone().into_os_string());
        a.extend(["--kernel".into(), OsString::from(&self.kernel)]);
        a.push("--params".into());
        a.push(
            serde_json::to_string(&self.params)
                .unwrap_or_default()
                .into(),
        );
        a.push("--geometry".into());
        a.push(
            serde_json::to_string(&self.geometry)
                .unwrap_or_default()
                .into(),
        );
        a.push("--test".into());
        a.push(self.test.clone().into_os_string());
        for dir in &self.include {
            a.push("--include".into());
            a.push(dir.clone().into_os_string());
        }
        if let Some(cache) = &self.cache_dir {
            a.push("--cache-dir".into());
            a.push(cache.clone().into_os_string());
        }
        a
    }

    /// Reads `--params` and `--geometry` as [`args`](Self::args) writes them.
    pub fn parse_json(
        params: &str,
        geometry: &str,
    ) -> Result<(BTreeMap<String, i64>, Geometry), PipelineError> {
        let params = serde_json::from_str(params)
            .map_err(|e| failed("--params is not a JSON object of integers", e))?;
        let geometry =
            serde_json::from_str(geometry).map_err(|e| failed("--geometry is not valid", e))?;
        Ok((params, geometry))
    }

    /// Compiles the kernel at its configuration and launches it once (the launch ncu profiles) on the test's
    /// inputs (outputs go to a temporary directory). The kernel and its test are read before the GPU is.
    pub fn run(&self) -> Result<(), PipelineError> {
        let prepared = self.prepare()?;
        let tuner = start_tuner(self.cache_dir.clone())?;
        self.launch(prepared, tuner)
    }

    /// The kernel at its configuration and its test, read from disk.
    fn prepare(&self) -> Result<(kt_tuner::TunableKernel, Config, TestSet), PipelineError> {
        let code = std::fs::read_to_string(&self.kernel_file)
            .map_err(|e| PipelineError::io("reading", &self.kernel_file, e))?;
        let parsed = kt_cuda::parse(&code)?;
        let signature = parsed.select_kernel(Some(&self.kernel))?;
        let tests = self.load_test(&ParamSpec::from_kernel(signature))?;
        let mut kernel = kt_tuner::TunableKernel::new(
            code.clone(),
            self.kernel.clone(),
            self.geometry.problem_size.clone(),
        );
        kernel.geometry = self.geometry.clone();
        kernel.params = self
            .params
            .iter()
            .map(|(name, v)| TunableParam::new(name.clone(), vec![*v]))
            .collect();
        kernel.include_dirs = self.include.clone();
        let config = Config::ints(self.params.iter().map(|(k, v)| (k.as_str(), *v)));
        Ok((kernel, config, tests))
    }

    /// Launches the prepared kernel in `tuner`: one timed launch (ncu profiles the kernel's first launch;
    /// its modules are loaded eagerly and ncu flushes the caches before each replay, so a first launch is
    /// what any other would be), then the reference run's probe with poisoned outputs. Nothing is written.
    fn launch(
        &self,
        (kernel, config, tests): (kt_tuner::TunableKernel, Config, TestSet),
        mut tuner: Tuner,
    ) -> Result<(), PipelineError> {
        tracing::debug!(kernel = %self.kernel, %config, "launching");
        for test in &tests.tests {
            tuner
                .time_launch(&kernel, &config, test)
                .map_err(|e| failed(&format!("launching {} at {config}", self.kernel), e))?;
        }
        tracing::debug!("launched; closing the tuner");
        // The worker exits by itself: a profiler watching it writes its report at exit.
        tuner.close(Duration::from_secs(10));
        tracing::debug!("tuner closed");
        Ok(())
    }

    /// The one test of `self.test` (its parent is the tests directory).
    fn load_test(&self, params: &[ParamSpec]) -> Result<TestSet, PipelineError> {
        let id = self
            .test
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = self.test.parent().unwrap_or(Path::new("."));
        let all = TestSet::load_dir(dir, params, &BTreeMap::new())
            .map_err(|e| failed(&format!("loading the tests in {}", dir.display()), e))?;
        let tests: Vec<_> = all.tests.into_iter().filter(|t| t.id == id).collect();
        if tests.is_empty() {
            return Err(failed(
                "--test",
                format!(
                    "{} is not a test directory (one holding a manifest.json)",
                    self.test.display()
                ),
            ));
        }
        Ok(TestSet { tests })
    }
}

/// The tuner a profiled launch runs in. Under ncu its worker must share the host's network namespace:
/// ncu's library in the worker reports to the ncu front end over a local socket.
fn start_tuner(cache_dir: Option<PathBuf>) -> Result<Tuner, PipelineError> {
    let worker = kt_tuner::worker::process::WorkerCommand {
        under_profiler: true,
        ..kt_tuner::worker::process::WorkerCommand::current_exe()
            .map_err(|e| failed("finding kt's worker", e))?
    };
    Tuner::new(TunerConfig {
        cache_dir,
        worker: Some(worker),
        ..TunerConfig::default()
    })
    .map_err(|e| failed("starting the tuner", e))
}

/// What a standby prints once its worker (and that worker's CUDA context) is up.
pub const STANDBY_READY: &str = "kt-profile-standby-ready";

/// A launch started before it is known what to launch (`kt __profile-launch --standby`): starts the
/// tuner (its worker process and CUDA context: under ncu the slow part of a profile) while the run is
/// still tuning, then reads one [`ProfileLaunch`] as a JSON line from `input` and runs it. An input that
/// ends without a line (the run needed no more profiles, or kt exited) ends it without a launch.
pub fn run_standby(
    cache_dir: Option<PathBuf>,
    input: &mut dyn std::io::BufRead,
) -> Result<(), PipelineError> {
    let mut tuner = start_tuner(cache_dir)?;
    // the worker's CUDA context under ncu is the slow part of a start: created before the launch is known
    tuner
        .wait_for_device()
        .map_err(|e| failed("starting the tuner's worker", e))?;
    // the run waits for this line before it times a kernel: a context being created under ncu slows kernels
    // other processes are timing
    println!("{STANDBY_READY}");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    tracing::debug!("standby ready; waiting for the launch on standard input");
    let mut line = String::new();
    input
        .read_line(&mut line)
        .map_err(|e| failed("reading the launch on standard input", e))?;
    if line.trim().is_empty() {
        tuner.close(Duration::from_secs(10));
        return Ok(());
    }
    let launch: ProfileLaunch = serde_json::from_str(&line)
        .map_err(|e| failed("the launch on standard input is not valid", e))?;
    tracing::debug!("launch read");
    let prepared = launch.prepare()?;
    launch.launch(prepared, tuner)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn launch() -> ProfileLaunch {
        let mut geometry = Geometry::new(vec!["B_width".into(), "A_height".into()]);
        geometry.shared_mem = Some("block_size_x*4".into());
        ProfileLaunch {
            kernel_file: "/run/tuning/profiles/k.cu".into(),
            kernel: "matrixMultiply".into(),
            params: [("block_size_x".to_string(), 32), ("tile".to_string(), 4)].into(),
            geometry,
            test: "/run/tests/t1".into(),
            include: vec!["/src".into()],
            cache_dir: Some("/run/tuning".into()),
        }
    }

    #[test]
    fn the_command_line_carries_the_configuration_and_geometry_as_json() {
        let args: Vec<String> = launch()
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[0], "__profile-launch");
        let value = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
        assert_eq!(value("--kernel"), "matrixMultiply");
        assert_eq!(value("--test"), "/run/tests/t1");
        assert_eq!(value("--include"), "/src");
        assert_eq!(value("--cache-dir"), "/run/tuning");
        let (params, geometry) =
            ProfileLaunch::parse_json(&value("--params"), &value("--geometry")).unwrap();
        assert_eq!(params, launch().params);
        assert_eq!(geometry, launch().geometry);
    }

    #[test]
    fn a_launch_goes_to_a_standby_as_one_json_line_and_comes_back_the_same() {
        let line = serde_json::to_string(&launch()).unwrap();
        assert!(!line.contains('\n'), "one line: {line}");
        let back: ProfileLaunch = serde_json::from_str(&line).unwrap();
        assert_eq!(back, launch());
    }

    #[test]
    fn bad_json_says_which_flag_is_wrong() {
        let err = ProfileLaunch::parse_json("[1]", "{}")
            .unwrap_err()
            .to_string();
        assert!(err.contains("--params"), "{err}");
    }

    #[test]
    fn a_test_path_that_is_no_test_is_refused_before_the_gpu() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = dir.path().join("k.cu");
        std::fs::write(
            &kernel,
            "__global__ void matrixMultiply(float* C, int n) { C[0] = n; }\n",
        )
        .unwrap();
        let spec = ProfileLaunch {
            kernel_file: kernel,
            test: dir.path().join("missing"),
            ..launch()
        };
        let err = spec.run().unwrap_err().to_string();
        assert!(err.contains("loading the tests"), "{err}");
    }
}
