//! `kt runs list`: one line per run directory, from its `run.json` and (when the run got that far) its
//! `result.json`. Directories that are not runs are skipped; runs whose files are unreadable are listed with
//! the problem instead of hiding them.

use std::path::{Path, PathBuf};

use kt_record::{ResultOutcome, RunDir, RunResult, RunStatus};
use serde::{Serialize, Serializer};

use crate::error::RunsError;

/// What `kt runs list` shows of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run's directory name: what `kt resume`, `kt runs show` and the studio find it by.
    pub id: String,
    /// The id run.json records, when it is not the directory's name (a copied or renamed run directory).
    pub recorded_id: Option<String>,
    pub path: PathBuf,
    pub kernel: String,
    pub strategy: String,
    /// `provider:model`.
    pub model: String,
    /// run.json's status; None (`unreadable` in JSON) when run.json does not parse.
    #[serde(serialize_with = "status_or_unreadable")]
    pub status: Option<RunStatus>,
    /// From result.json; absent while running or when nothing was measured.
    pub speedup: Option<f64>,
    /// The speedup's 95 % interval (result.json schema 2), from separate launches at the end of the run.
    pub speedup_ci95: Option<[f64; 2]>,
    /// The thesis's gain (t_naive − t_best) / t_naive, as a fraction.
    pub gain: Option<f64>,
    /// `improved`, `no_improvement` or `not_verified` for a finished run.
    pub outcome: Option<ResultOutcome>,
    /// The prompt file a `manual:` run waits for an answer to.
    pub waiting_for: Option<String>,
    /// The run stopped where it needs a CUDA GPU (result.json's `needs_gpu`): `kt resume` on a GPU machine
    /// continues it.
    pub needs_gpu: bool,
    /// RFC 3339, UTC.
    pub started: String,
    /// Active time: result.json's `wall_time_s.total`, summed over the run's attempts (the idle time between a
    /// stop and its `kt resume` is not counted); finished − started for runs without it.
    pub duration_s: Option<f64>,
    /// Why the run's files could not be read, when they could not.
    pub problem: Option<String>,
}

/// Every run under `base`, oldest first (run ids start with their UTC start time).
pub fn list_runs(base: &Path) -> Result<Vec<RunSummary>, RunsError> {
    let entries = match std::fs::read_dir(base) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(RunsError::io("listing runs in", base, e)),
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("run.json").is_file())
        .collect();
    dirs.sort();
    Ok(dirs.iter().map(|d| summarize(d)).collect())
}

/// The summary of one run directory.
pub fn summarize(dir: &Path) -> RunSummary {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let mut summary = RunSummary {
        id,
        recorded_id: None,
        path: dir.to_path_buf(),
        kernel: String::new(),
        strategy: String::new(),
        model: String::new(),
        status: None,
        speedup: None,
        speedup_ci95: None,
        gain: None,
        outcome: None,
        waiting_for: None,
        needs_gpu: false,
        started: String::new(),
        duration_s: None,
        problem: None,
    };
    let run = match RunDir::open(dir).and_then(|r| r.read_meta().map(|m| (r, m))) {
        Ok(x) => x,
        Err(e) => {
            summary.problem = Some(e.to_string());
            return summary;
        }
    };
    let (run, meta) = run;
    // listed by its directory: a copy is the copy, not the run it was copied from
    if meta.run_id != summary.id && !summary.id.is_empty() {
        summary.recorded_id = Some(meta.run_id.clone());
    } else {
        summary.id = meta.run_id.clone();
    }
    summary.kernel = meta.kernel.clone();
    summary.strategy = meta.strategy.clone();
    summary.model = if meta.llm.model.is_empty() || meta.llm.model == meta.llm.provider {
        meta.llm.provider.clone()
    } else {
        format!("{}:{}", meta.llm.provider, meta.llm.model)
    };
    summary.status = Some(meta.status);
    summary.started = meta.started.clone();
    // kt-record's lenient reading; nothing yet while the run has not written it (or it is not JSON)
    let result = RunResult::read(&run.result_json())
        .ok()
        .flatten()
        .unwrap_or_default();
    summary.speedup = result.speedup;
    summary.speedup_ci95 = result.speedup_ci95;
    summary.gain = result.gain;
    summary.outcome = result.outcome;
    summary.needs_gpu = result.needs_gpu;
    summary.waiting_for = result
        .waiting_for
        .as_ref()
        .map(|w| w.prompt_file.to_string_lossy().to_string());
    // Active time: a run resumed a day later did not take a day.
    summary.duration_s = result.total_wall_s().or_else(|| {
        match (
            parse_time(&meta.started),
            meta.finished.as_deref().and_then(parse_time),
        ) {
            (Some(a), Some(b)) => Some((b - a).as_seconds_f64().max(0.0)),
            _ => None,
        }
    });
    summary
}

impl RunSummary {
    /// The status as `kt runs list` prints it: run.json's, or `unreadable`.
    pub fn status_text(&self) -> &'static str {
        self.status.map_or("unreadable", RunStatus::as_str)
    }
}

fn status_or_unreadable<S: Serializer>(
    status: &Option<RunStatus>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(status.map_or("unreadable", RunStatus::as_str))
}

fn parse_time(text: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
}

/// `1h02m`, `3m05s`, `12.3s`: short enough for a table column.
pub fn format_duration(seconds: f64) -> String {
    if seconds < 60.0 {
        return format!("{seconds:.1}s");
    }
    let total = seconds.round() as u64;
    if total < 3600 {
        format!("{}m{:02}s", total / 60, total % 60)
    } else {
        format!("{}h{:02}m", total / 3600, (total % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A finished run `id` under `base`, started 03:15:00 and finished at `finished`, with `result`.
    fn finished_run(base: &Path, id: &str, finished: &str, result: Value) -> PathBuf {
        let dir = base.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("run.json"),
            json!({"run_id": id, "kernel_file": "mm.cu", "kernel": "mm",
                   "strategy": "autonomous", "settings": {}, "llm": {"provider": "openai", "model": "gpt-4.1"},
                   "status": "finished", "started": "2026-11-22T03:15:00Z", "finished": finished,
                   "kt_version": "0.1.0"})
            .to_string(),
        )
        .unwrap();
        std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
        dir
    }

    #[test]
    fn runs_are_listed_with_speedup_and_duration_and_broken_ones_are_flagged() {
        let base = tempfile::tempdir().unwrap();
        finished_run(
            base.path(),
            "20261122-031500-mm-autonomous-aaaa",
            "2026-11-22T03:17:05Z",
            json!({"speedup": 6.5}),
        );
        let bad = base.path().join("20261122-041500-broken");
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("run.json"), "{not json").unwrap();
        std::fs::create_dir_all(base.path().join("not-a-run")).unwrap();

        let runs = list_runs(base.path()).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].model, "openai:gpt-4.1");
        assert_eq!(runs[0].status_text(), "finished");
        assert_eq!(runs[0].speedup, Some(6.5));
        assert_eq!(runs[0].duration_s, Some(125.0));
        assert_eq!(runs[1].status_text(), "unreadable");
        assert!(runs[1].problem.is_some());
    }

    #[test]
    fn a_run_stopped_for_want_of_a_gpu_says_so() {
        let base = tempfile::tempdir().unwrap();
        let stopped = finished_run(
            base.path(),
            "20261122-031500-mm-autonomous-cccc",
            "2026-11-22T03:15:02Z",
            json!({"needs_gpu": true, "error": "a CUDA GPU is needed from here on"}),
        );
        let done = finished_run(
            base.path(),
            "20261122-031500-mm-autonomous-dddd",
            "2026-11-22T03:15:02Z",
            json!({"speedup": 2.0}),
        );
        assert!(summarize(&stopped).needs_gpu);
        assert!(!summarize(&done).needs_gpu);
    }

    #[test]
    fn a_copied_run_directory_is_listed_by_its_directory() {
        let base = tempfile::tempdir().unwrap();
        let run = finished_run(
            base.path(),
            "20261122-031500-mm-autonomous-eeee",
            "2026-11-22T03:15:02Z",
            json!({"speedup": 2.0}),
        );
        let copy = base.path().join("my-copy");
        std::fs::create_dir_all(&copy).unwrap();
        for f in ["run.json", "result.json"] {
            std::fs::copy(run.join(f), copy.join(f)).unwrap();
        }
        let listed = summarize(&copy);
        assert_eq!(listed.id, "my-copy");
        assert_eq!(
            listed.recorded_id.as_deref(),
            Some("20261122-031500-mm-autonomous-eeee")
        );
        assert_eq!(summarize(&run).recorded_id, None);
    }

    #[test]
    fn the_duration_is_active_time_not_the_idle_time_between_attempts() {
        let base = tempfile::tempdir().unwrap();
        // 1.5 s of work, resumed once: 20.4 s from start to finish.
        let run = finished_run(
            base.path(),
            "20261122-031500-mm-autonomous-bbbb",
            "2026-11-22T03:15:20.4Z",
            json!({"wall_time_s": {"stage1": 0.5, "stage2": 0.5, "stage3": 0.5, "total": 1.5}}),
        );
        assert_eq!(summarize(&run).duration_s, Some(1.5));
    }

    #[test]
    fn a_missing_runs_directory_lists_nothing() {
        assert!(
            list_runs(Path::new("/nonexistent/kt-runs"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(format_duration(12.34), "12.3s");
        assert_eq!(format_duration(125.0), "2m05s");
        assert_eq!(format_duration(3725.0), "1h02m");
    }
}
