//! Generator runs started ahead. Stage 2 makes its tests one at a time (each is checked, and may send the
//! program back for revision, before the next), but one program usually makes all of them: test `i` is the
//! same program with seed `first_seed + i`. So when test `i` runs a program, the remaining seeds run the
//! same program at once, side by side in their own sandboxes, into a staging directory beside `tests/`;
//! the later test that asks for exactly that program and seed takes the finished result and moves it into
//! `tests/`. A program that is revised in between simply never takes its prefetched runs, and whatever
//! is left in staging is deleted when Stage 2 ends. Nothing reaches `tests/` that a test did not ask for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use kt_sandbox::generator::{GeneratedTest, GeneratorError, GeneratorSpec};
use kt_sandbox::{PythonRuntime, Sandbox};
use tokio::task::JoinHandle;

type Run = JoinHandle<Result<GeneratedTest, GeneratorError>>;

/// Prefetched generator runs by (program, seed) key, staged under one directory.
#[derive(Clone)]
pub(crate) struct GeneratorPrefetch {
    staging: PathBuf,
    runs: Arc<Mutex<HashMap<String, Run>>>,
}

/// The key of a program run with a seed (the effect key `run_generator` journals under).
pub(crate) fn run_key(script: &str, seed: u64) -> String {
    format!(
        "seed{seed}-{}",
        &blake3::hash(script.as_bytes()).to_hex()[..16]
    )
}

impl GeneratorPrefetch {
    /// Prefetched runs stage under `staging` (beside the tests directory, never inside it).
    pub fn new(staging: PathBuf) -> Self {
        Self {
            staging,
            runs: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The staging directory of the tests directory `tests_dir`.
    pub fn staging_for(tests_dir: &Path) -> PathBuf {
        let name = tests_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tests".into());
        tests_dir.with_file_name(format!("{name}.prefetch"))
    }

    /// Starts `script` with each of `seeds` not started yet.
    pub fn start(
        &self,
        sandbox: &Sandbox,
        python: &PythonRuntime,
        script: &str,
        spec: &GeneratorSpec,
        seeds: impl IntoIterator<Item = u64>,
    ) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        for seed in seeds {
            let key = run_key(script, seed);
            if runs.contains_key(&key) {
                continue;
            }
            let (sandbox, python, script, spec) = (
                sandbox.clone(),
                python.clone(),
                script.to_string(),
                spec.clone(),
            );
            let dest = self.staging.join(&key);
            tracing::debug!(seed, "generator run started ahead");
            let run = tokio::task::spawn_blocking(move || {
                kt_sandbox::generator::run_generator(&sandbox, &python, &script, &spec, seed, &dest)
            });
            runs.insert(key, run);
        }
    }

    /// The prefetched run of `key`, finished and moved into `tests_dir`; None when there is none (the caller
    /// runs the program itself).
    pub async fn take(
        &self,
        key: &str,
        tests_dir: &Path,
    ) -> Option<Result<GeneratedTest, GeneratorError>> {
        let run = self
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key)?;
        let finished = match run.await {
            Ok(finished) => finished,
            // a run that panicked or was cancelled: run the program again rather than fail on its account
            Err(_) => return None,
        };
        Some(finished.and_then(|t| move_into(t, tests_dir)))
    }

    /// Waits for the runs nobody took and deletes the staging directory.
    pub async fn finish(&self) {
        let left: Vec<Run> = self
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, run)| run)
            .collect();
        for run in left {
            let _ = run.await;
        }
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

/// Moves a staged test into `tests_dir` under its content hash; an identical test already there is reused.
fn move_into(staged: GeneratedTest, tests_dir: &Path) -> Result<GeneratedTest, GeneratorError> {
    let dir = tests_dir.join(&staged.id);
    let reused = dir.is_dir();
    if reused {
        let _ = std::fs::remove_dir_all(&staged.dir);
    } else {
        std::fs::rename(&staged.dir, &dir).map_err(|source| GeneratorError::Io {
            what: "move a prefetched test into",
            path: dir.clone(),
            source,
        })?;
    }
    Ok(GeneratedTest {
        dir,
        reused,
        ..staged
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn staged(root: &Path, id: &str) -> GeneratedTest {
        let dir = root.join("tests.prefetch").join("k").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("manifest.json"), "{}").unwrap();
        GeneratedTest {
            id: id.into(),
            dir,
            manifest: serde_json::from_value(serde_json::json!({
                "seed": 1, "args": [], "outputs": []
            }))
            .unwrap_or_else(|_| panic!("a minimal manifest")),
            reused: false,
            stdout: String::new(),
            elapsed: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn staging_is_beside_the_tests_directory_not_inside_it() {
        let staging = GeneratorPrefetch::staging_for(Path::new("/run/tests"));
        assert_eq!(staging, Path::new("/run/tests.prefetch"));
    }

    #[test]
    fn a_staged_test_moves_into_the_tests_directory_or_is_reused_there() {
        let root = tempfile::tempdir().unwrap();
        let tests = root.path().join("tests");
        std::fs::create_dir_all(&tests).unwrap();
        let moved = move_into(staged(root.path(), "abc"), &tests).unwrap();
        assert_eq!(moved.dir, tests.join("abc"));
        assert!(!moved.reused && tests.join("abc/manifest.json").is_file());
        let again = staged(root.path(), "abc");
        let staged_dir = again.dir.clone();
        let reused = move_into(again, &tests).unwrap();
        assert!(reused.reused && !staged_dir.exists());
    }

    #[test]
    fn the_key_names_the_seed_and_the_program() {
        assert_ne!(run_key("a", 1), run_key("a", 2));
        assert_ne!(run_key("a", 1), run_key("b", 1));
        assert!(run_key("a", 7).starts_with("seed7-"));
    }

    #[tokio::test]
    async fn nothing_prefetched_is_none_and_finish_removes_staging() {
        let root = tempfile::tempdir().unwrap();
        let prefetch = GeneratorPrefetch::new(root.path().join("tests.prefetch"));
        std::fs::create_dir_all(root.path().join("tests.prefetch/x")).unwrap();
        assert!(
            prefetch
                .take("seed1-0", &root.path().join("tests"))
                .await
                .is_none()
        );
        prefetch.finish().await;
        assert!(!root.path().join("tests.prefetch").exists());
    }
}
