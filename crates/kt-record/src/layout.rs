//! The directory a kt run leaves on disk (docs/run-format.md): creating it with its `run.json`, and the path
//! of every file in it. kt-pipeline writes through this type, and every reader (kt-runs, kt-experiments, the
//! `kt` binary) finds files through it rather than by spelling paths themselves.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::RecordError;
use crate::gpu::GpuRecord;
use crate::protections::Protections;
use crate::run_llm::RunLlm;
use crate::run_meta::{RunMeta, RunSettings};
use crate::run_status::RunStatus;

/// The environment variable naming where run directories are created.
pub const RUNS_DIR_ENV: &str = "KT_RUNS_DIR";

/// A run directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    root: PathBuf,
}

/// What a new run is: everything of `run.json` that is known at the start.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub kernel_file: &'a Path,
    pub kernel: &'a str,
    /// `autonomous`, `explicit`, `one-prompt`, or `testgen` for runs that stop after Stage 2.
    pub strategy: &'a str,
    pub settings: RunSettings,
    pub llm: RunLlm,
}

impl RunDir {
    /// `--out` when given, else `$KT_RUNS_DIR`, else `./kt-runs`.
    pub fn base_dir(out: Option<&Path>) -> PathBuf {
        if let Some(out) = out {
            return out.to_path_buf();
        }
        match std::env::var_os(RUNS_DIR_ENV).filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => PathBuf::from("kt-runs"),
        }
    }

    /// Creates `base/<run-id>/` with `run.json` (status `running`) and `input.cu` (a copy of the kernel file).
    pub fn create(base: &Path, run: NewRun<'_>) -> Result<RunDir, RecordError> {
        let now = time::OffsetDateTime::now_utc();
        std::fs::create_dir_all(base)
            .map_err(|e| RecordError::io("creating the runs directory", base, e))?;
        // The 4 hex digits only need to keep two runs started in the same second apart; retry on a clash.
        let mut attempt = 0u32;
        let root = loop {
            let id = run_id(now, run.kernel, run.strategy, attempt);
            let root = base.join(&id);
            // 0700: prompts, answers, the store and the tests are the user's, not every local user's
            match std::fs::DirBuilder::new().mode(0o700).create(&root) {
                Ok(()) => break root,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => {
                    attempt += 1
                }
                Err(e) => return Err(RecordError::io("creating the run directory", root, e)),
            }
        };
        let dir = RunDir { root };
        let source = std::fs::read(run.kernel_file)
            .map_err(|e| RecordError::io("reading the kernel file", run.kernel_file, e))?;
        write_file(&dir.input_cu(), &source)?;
        let provenance = crate::provenance::Provenance::seal(&dir.run_id(), &run.llm);
        let meta = RunMeta {
            run_id: dir.run_id(),
            kernel_file: run.kernel_file.display().to_string(),
            kernel: run.kernel.to_string(),
            strategy: run.strategy.to_string(),
            settings: run.settings,
            llm: run.llm,
            status: RunStatus::Running,
            started: rfc3339(now),
            finished: None,
            kt_version: env!("CARGO_PKG_VERSION").to_string(),
            sandbox: None,
            provenance,
            gpu: None,
            prompt_hashes: Default::default(),
        };
        dir.write_meta(&meta)?;
        Ok(dir)
    }

    /// An existing run directory (it must hold `run.json`). One that holds a symbolic link is refused: kt writes
    /// into a run directory (its lock, store, log, result and report) and serves its files, and a link planted in a
    /// handed-over or copied run would turn those writes and reads into ones elsewhere. kt never makes links there.
    pub fn open(root: impl Into<PathBuf>) -> Result<RunDir, RecordError> {
        let dir = RunDir { root: root.into() };
        if std::fs::symlink_metadata(dir.run_json()).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(linked(&dir.root, &dir.run_json()));
        }
        if !dir.run_json().is_file() {
            return Err(RecordError::BadFile {
                path: dir.root.clone(),
                what: "run directory",
                message: "it has no run.json; give a directory that `kt transform` or `kt testgen` created".into(),
            });
        }
        if let Some(link) = first_link(&dir.root) {
            return Err(linked(&dir.root, &link));
        }
        Ok(dir)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The directory name.
    pub fn run_id(&self) -> String {
        self.root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default()
    }
    pub fn run_json(&self) -> PathBuf {
        self.root.join("run.json")
    }
    pub fn sqlite(&self) -> PathBuf {
        self.root.join("run.sqlite")
    }
    /// An exact copy of the user's kernel file.
    pub fn input_cu(&self) -> PathBuf {
        self.root.join("input.cu")
    }
    /// The kernel's own unit, written when the file holds more than that (host code, other kernels, user
    /// headers): then this is what every stage works on, and `best_program.cu` is delivered beside `best.cu`.
    pub fn unit_cu(&self) -> PathBuf {
        self.root.join("unit.cu")
    }
    /// The code the run works on: `unit.cu` when there is one, else `input.cu`.
    pub fn kernel_code(&self) -> Result<String, RecordError> {
        let path = if self.unit_cu().is_file() {
            self.unit_cu()
        } else {
            self.input_cu()
        };
        std::fs::read_to_string(&path).map_err(|e| RecordError::io("reading", path, e))
    }
    /// The strategy the run was made with, snapshotted when it started (resume, replay and debug use it).
    pub fn strategy_toml(&self) -> PathBuf {
        self.root.join("strategy.toml")
    }
    pub fn kernel_info_json(&self) -> PathBuf {
        self.root.join("kernel_info.json")
    }
    pub fn tests_dir(&self) -> PathBuf {
        self.root.join("tests")
    }
    /// Stage 2's warnings about the tests (sizes that leave bugs unexposed), a JSON list of strings.
    pub fn test_warnings_json(&self) -> PathBuf {
        self.root.join("test_warnings.json")
    }
    /// The warnings of [`Self::test_warnings_json`]; none when the file is missing or unreadable.
    pub fn test_warnings(&self) -> Vec<String> {
        std::fs::read_to_string(self.test_warnings_json())
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }
    pub fn kernels_dir(&self) -> PathBuf {
        self.root.join("kernels")
    }
    pub fn llm_jsonl(&self) -> PathBuf {
        self.root.join("llm.jsonl")
    }
    pub fn tuning_dir(&self) -> PathBuf {
        self.root.join("tuning")
    }
    pub fn best_cu(&self) -> PathBuf {
        self.root.join("best.cu")
    }
    pub fn best_params_json(&self) -> PathBuf {
        self.root.join("best_params.json")
    }
    pub fn kernel_tuner_dir(&self) -> PathBuf {
        self.root.join("kernel_tuner")
    }
    pub fn result_json(&self) -> PathBuf {
        self.root.join("result.json")
    }
    pub fn report_md(&self) -> PathBuf {
        self.root.join("report.md")
    }
    /// The shape of the run's Stage 3 graph ([`crate::GraphOutline`]), saved when that graph first starts.
    pub fn graph_json(&self) -> PathBuf {
        self.root.join("graph.json")
    }

    /// Where the result files of graph branch `branch` go: the run's root for the main branch (0), else
    /// `branches/b<N>/`, so that continuing a `kt replay` or `kt fork` branch never overwrites the main
    /// branch's recorded results.
    pub fn results(&self, branch: u32) -> ResultFiles {
        if branch == 0 {
            ResultFiles {
                root: self.root.clone(),
                branch: None,
            }
        } else {
            let name = format!("b{branch}");
            ResultFiles {
                root: self.root.join("branches").join(&name),
                branch: Some(name),
            }
        }
    }

    pub fn read_meta(&self) -> Result<RunMeta, RecordError> {
        read_json(&self.run_json(), "run.json")
    }

    pub fn write_meta(&self, meta: &RunMeta) -> Result<(), RecordError> {
        write_json(&self.run_json(), meta)
    }

    /// Sets the status in `run.json`, and the finish time when the status is final.
    pub fn set_status(&self, status: RunStatus) -> Result<(), RecordError> {
        let mut meta = self.read_meta()?;
        meta.status = status;
        meta.finished =
            (status != RunStatus::Running).then(|| rfc3339(time::OffsetDateTime::now_utc()));
        self.write_meta(&meta)
    }

    /// Records in `run.json` the sandbox protections generated programs run under.
    pub fn record_sandbox(&self, protections: Protections) -> Result<(), RecordError> {
        let mut meta = self.read_meta()?;
        if meta.sandbox != Some(protections) {
            meta.sandbox = Some(protections);
            self.write_meta(&meta)?;
        }
        Ok(())
    }

    /// Records in `run.json` the GPU the run's kernels ran on (the latest one, for a run resumed elsewhere).
    pub fn record_gpu(&self, gpu: &GpuRecord) -> Result<(), RecordError> {
        let mut meta = self.read_meta()?;
        if meta.gpu.as_ref() != Some(gpu) {
            meta.gpu = Some(gpu.clone());
            self.write_meta(&meta)?;
        }
        Ok(())
    }
}

/// The result files of one branch of a run's Stage 3 (RUN_FORMAT.md): `kernels/`, `best.cu`,
/// `best_params.json`, `kernel_tuner/`, `result.json` and `report.md`, under the run's root for the main
/// branch and under `branches/b<N>/` for another one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultFiles {
    root: PathBuf,
    branch: Option<String>,
}

impl ResultFiles {
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// `b<N>` for a branch other than the main one.
    pub fn branch(&self) -> Option<&str> {
        self.branch.as_deref()
    }
    pub fn kernels_dir(&self) -> PathBuf {
        self.root.join("kernels")
    }
    pub fn best_cu(&self) -> PathBuf {
        self.root.join("best.cu")
    }
    /// The user's whole program with the best kernel put back in (only for inputs with a `unit.cu`).
    pub fn best_program_cu(&self) -> PathBuf {
        self.root.join("best_program.cu")
    }
    pub fn best_params_json(&self) -> PathBuf {
        self.root.join("best_params.json")
    }
    pub fn kernel_tuner_dir(&self) -> PathBuf {
        self.root.join("kernel_tuner")
    }
    pub fn result_json(&self) -> PathBuf {
        self.root.join("result.json")
    }
    pub fn report_md(&self) -> PathBuf {
        self.root.join("report.md")
    }
}

/// `<UTC yyyymmdd-HHMMSS>-<kernel>-<strategy>-<4 hex>`.
fn run_id(now: time::OffsetDateTime, kernel: &str, strategy: &str, salt: u32) -> String {
    let stamp = format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    );
    let seed = format!(
        "{}-{}-{}-{}",
        now.unix_timestamp_nanos(),
        std::process::id(),
        kernel,
        salt
    );
    let hex = &blake3::hash(seed.as_bytes()).to_hex()[..4];
    format!("{stamp}-{}-{}-{hex}", slug(kernel), slug(strategy))
}

/// Keeps a name safe as a path component.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}

/// Writes a record of the run atomically (temporary file, fsync, rename, fsync of the directory): a crash, a
/// kill or a full disk never leaves it half-written ([`crate::atomic_write`]).
/// The error for a run directory `root` that holds the symbolic link `link`.
fn linked(root: &Path, link: &Path) -> RecordError {
    RecordError::BadFile {
        path: root.to_path_buf(),
        what: "run directory",
        message: format!(
            "it holds a symbolic link, {}, which kt never follows in a run (a run directory is data: a link there \
             would redirect kt's writes); remove it, or copy the run without links (cp -rL)",
            link.display()
        ),
    }
}

/// The first symbolic link under `root` (a few levels deep, a bounded number of entries: runs are shallow).
fn first_link(root: &Path) -> Option<PathBuf> {
    let mut stack = vec![(root.to_path_buf(), 0u32)];
    let mut seen = 0u32;
    while let Some((dir, depth)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            seen += 1;
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                return Some(entry.path());
            }
            if kind.is_dir() && depth < 6 && seen < 100_000 {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    None
}

pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    crate::atomic_write::write_atomically(path, bytes)
}

/// Writes `value` as pretty JSON, atomically (see [`write_file`]).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RecordError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| RecordError::BadFile {
        path: path.to_path_buf(),
        what: "JSON",
        message: e.to_string(),
    })?;
    text.push('\n');
    write_file(path, text.as_bytes())
}

/// Reads a JSON record; `what` names it in the error.
pub fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &'static str,
) -> Result<T, RecordError> {
    let text = std::fs::read_to_string(path).map_err(|e| RecordError::io("reading", path, e))?;
    serde_json::from_str(&text).map_err(|e| RecordError::BadFile {
        path: path.to_path_buf(),
        what,
        message: e.to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn new_run(file: &Path) -> NewRun<'_> {
        NewRun {
            kernel_file: file,
            kernel: "vectorAdd",
            strategy: "testgen",
            settings: RunSettings {
                tests: Some(3),
                ..RunSettings::default()
            },
            llm: RunLlm {
                provider: "scripted".into(),
                model: "scripted".into(),
                ..RunLlm::default()
            },
        }
    }

    #[test]
    fn created_run_has_run_json_input_copy_and_a_well_formed_id() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = tmp.path().join("k.cu");
        std::fs::write(&cu, "__global__ void vectorAdd() {}").unwrap();
        let run = RunDir::create(&tmp.path().join("runs"), new_run(&cu)).unwrap();
        let id = run.run_id();
        // 20261122-031500-vectorAdd-testgen-3fa2
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(parts.len(), 5, "{id}");
        assert_eq!(parts[0].len(), 8);
        assert_eq!(parts[1].len(), 6);
        assert_eq!(&parts[2..4], ["vectorAdd", "testgen"]);
        assert_eq!(parts[4].len(), 4);
        assert_eq!(
            std::fs::read_to_string(run.input_cu()).unwrap(),
            "__global__ void vectorAdd() {}"
        );
        let meta = run.read_meta().unwrap();
        assert_eq!(meta.status, RunStatus::Running);
        assert_eq!(meta.run_id, id);
        assert!(meta.finished.is_none());
        run.set_status(RunStatus::Failed).unwrap();
        let meta = RunDir::open(run.root()).unwrap().read_meta().unwrap();
        assert_eq!(meta.status, RunStatus::Failed);
        assert!(meta.finished.is_some());
    }

    #[test]
    fn two_runs_in_the_same_second_get_different_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = tmp.path().join("k.cu");
        std::fs::write(&cu, "x").unwrap();
        let a = RunDir::create(tmp.path(), new_run(&cu)).unwrap();
        let b = RunDir::create(tmp.path(), new_run(&cu)).unwrap();
        assert_ne!(a.root(), b.root());
    }

    #[test]
    fn a_run_is_private_to_its_user_and_records_who_made_it() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let cu = tmp.path().join("k.cu");
        std::fs::write(&cu, "x").unwrap();
        let run = RunDir::create(tmp.path(), new_run(&cu)).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(run.root()), 0o700);
        assert_eq!(mode(&run.run_json()), 0o600);
        let meta = run.read_meta().unwrap();
        if std::env::var_os("HOME").is_some() {
            let checked = crate::provenance::Provenance::check(
                meta.provenance.as_ref(),
                &meta.run_id,
                &meta.llm,
            );
            assert!(checked.is_ok(), "{checked:?}");
        }
    }

    #[test]
    fn a_run_with_a_symbolic_link_inside_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = tmp.path().join("k.cu");
        std::fs::write(&cu, "x").unwrap();
        let run = RunDir::create(tmp.path(), new_run(&cu)).unwrap();
        assert!(RunDir::open(run.root()).is_ok());
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        std::fs::create_dir(run.root().join("nodes")).unwrap();
        std::os::unix::fs::symlink(&victim, run.root().join("nodes/llm.jsonl")).unwrap();
        let err = RunDir::open(run.root()).unwrap_err().to_string();
        assert!(
            err.contains("symbolic link") && err.contains("llm.jsonl"),
            "{err}"
        );
        std::fs::remove_file(run.root().join("nodes/llm.jsonl")).unwrap();
        std::fs::remove_file(run.run_json()).unwrap();
        std::os::unix::fs::symlink(&victim, run.run_json()).unwrap();
        let err = RunDir::open(run.root()).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
    }

    #[test]
    fn open_refuses_a_non_run() {
        let tmp = tempfile::tempdir().unwrap();
        let err = RunDir::open(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("run.json"), "{err}");
    }

    #[test]
    fn results_of_a_side_branch_go_under_branches_and_the_main_ones_stay_at_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = tmp.path().join("k.cu");
        std::fs::write(&cu, "x").unwrap();
        let run = RunDir::create(tmp.path(), new_run(&cu)).unwrap();
        let main = run.results(0);
        assert_eq!(main.result_json(), run.result_json());
        assert_eq!(main.best_cu(), run.best_cu());
        assert_eq!(main.branch(), None);
        let side = run.results(2);
        assert_eq!(side.root(), run.root().join("branches/b2"));
        assert_eq!(
            side.result_json(),
            run.root().join("branches/b2/result.json")
        );
        assert_eq!(side.kernels_dir(), run.root().join("branches/b2/kernels"));
        assert_eq!(side.branch(), Some("b2"));
    }

    #[test]
    fn base_dir_prefers_the_flag() {
        assert_eq!(
            RunDir::base_dir(Some(Path::new("/x/y"))),
            PathBuf::from("/x/y")
        );
    }
}
