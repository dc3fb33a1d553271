//! Finding a run from what the user typed: a path to a run directory, or a run id looked up under the runs
//! directory (`--runs-dir`, else `$KT_RUNS_DIR`, else `./kt-runs`).

use std::path::{Path, PathBuf};

use kt_record::RunDir;

use crate::error::RunsError;

/// The directory runs live in: `explicit` when given, else `$KT_RUNS_DIR`, else `./kt-runs`.
pub fn runs_base(explicit: Option<&Path>) -> PathBuf {
    RunDir::base_dir(explicit)
}

/// Resolves `arg` (a run directory, or a run id — a unique prefix is enough — under `base`).
pub fn resolve_run(arg: &str, base: &Path) -> Result<RunDir, RunsError> {
    let as_path = Path::new(arg);
    if as_path.join("run.json").is_file() {
        return open(as_path);
    }
    let direct = base.join(arg);
    if direct.join("run.json").is_file() {
        return open(&direct);
    }
    // A unique prefix of an id is accepted: ids are long and their start (the time) is what people remember.
    let mut matches: Vec<PathBuf> = std::fs::read_dir(base)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("run.json").is_file())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(arg))
        })
        .collect();
    matches.sort();
    match matches.len() {
        1 => open(&matches[0]),
        0 => Err(RunsError::RunNotFound {
            arg: arg.to_string(),
            searched: base.to_path_buf(),
        }),
        _ => Err(RunsError::Usage(format!(
            "`{arg}` matches {} runs under {} ({}); give more of the id",
            matches.len(),
            base.display(),
            matches
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn open(dir: &Path) -> Result<RunDir, RunsError> {
    RunDir::open(dir).map_err(|source| RunsError::RunDir {
        run: dir.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_run(base: &Path, id: &str) {
        let dir = base.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), "{}").unwrap();
    }

    #[test]
    fn a_run_is_found_by_path_by_id_and_by_unique_prefix() {
        let base = tempfile::tempdir().unwrap();
        fake_run(base.path(), "20261122-031500-mm-autonomous-3fa2");
        fake_run(base.path(), "20261122-041500-mm-explicit-0001");
        let by_path = resolve_run(
            base.path()
                .join("20261122-031500-mm-autonomous-3fa2")
                .to_str()
                .unwrap(),
            Path::new("/nonexistent"),
        )
        .unwrap();
        assert!(
            by_path
                .root()
                .ends_with("20261122-031500-mm-autonomous-3fa2")
        );
        let by_id = resolve_run("20261122-041500-mm-explicit-0001", base.path()).unwrap();
        assert!(by_id.root().ends_with("20261122-041500-mm-explicit-0001"));
        let by_prefix = resolve_run("20261122-03", base.path()).unwrap();
        assert!(by_prefix.root().to_string_lossy().ends_with("3fa2"));
    }

    #[test]
    fn ambiguous_or_missing_runs_are_errors_that_say_what_to_do() {
        let base = tempfile::tempdir().unwrap();
        fake_run(base.path(), "20261122-031500-a");
        fake_run(base.path(), "20261122-031501-b");
        let err = resolve_run("20261122", base.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("matches 2 runs"), "{err}");
        let err = resolve_run("nope", base.path()).unwrap_err().to_string();
        assert!(err.contains("kt runs list"), "{err}");
    }
}
