//! Live updates without touching the database on every tick: a run's files change whenever it writes
//! anything (a checkpoint commits to `run.sqlite` or its WAL, an LLM call appends to `llm.jsonl`, the tuner
//! appends a configuration under `tuning/`, the run's status lands in `run.json`/`result.json`), so the studio
//! stats those few paths every [`POLL`] and pushes a server-sent event when their sizes or times moved. The
//! page then fetches what it shows. A run started from the CLI in another terminal is seen the same way.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;

/// How often the files are looked at: well inside the one second a change may take to reach the page.
pub const POLL: Duration = Duration::from_millis(200);

/// What the watched files looked like: (path, length, modification time) of each.
pub type Fingerprint = Vec<(PathBuf, u64, Option<SystemTime>)>;

fn stat(path: &Path) -> (PathBuf, u64, Option<SystemTime>) {
    match std::fs::metadata(path) {
        Ok(m) => (path.to_path_buf(), m.len(), m.modified().ok()),
        Err(_) => (path.to_path_buf(), 0, None),
    }
}

/// The fingerprint of one run directory.
pub fn run_fingerprint(dir: &Path) -> Fingerprint {
    let mut fp: Fingerprint = [
        "run.json",
        "result.json",
        "run.sqlite",
        "run.sqlite-wal",
        "run.sqlite-journal",
        "llm.jsonl",
        "kernels",
        "tuning",
    ]
    .iter()
    .map(|name| {
        let s = stat(&dir.join(name));
        // SQLite makes an empty WAL whenever anyone (the studio too) opens the store, and deletes it when the
        // last one closes: an empty one holds nothing to show
        if name.starts_with("run.sqlite-") && s.1 == 0 {
            (s.0, 0, None)
        } else {
            s
        }
    })
    .collect();
    // Appending to a file does not change its directory's time: look at the tuner's results files too.
    if let Ok(entries) = std::fs::read_dir(dir.join("tuning")) {
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        fp.extend(files.iter().map(|p| stat(p)));
    }
    fp
}

/// The fingerprint of the runs directory: its runs and their status files.
pub fn runs_fingerprint(base: &Path) -> Fingerprint {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    let mut fp = vec![stat(base)];
    for d in dirs {
        fp.push(stat(&d.join("run.json")));
        fp.push(stat(&d.join("result.json")));
        fp.push(stat(&d.join("cells.jsonl")));
    }
    fp
}

/// Server-sent events: `change` (data: a counter) at once and whenever `fingerprint` moves.
pub fn watch<F>(fingerprint: F) -> Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>>
where
    F: Fn() -> Fingerprint + Send + Sync + 'static,
{
    let fingerprint = std::sync::Arc::new(fingerprint);
    let stream = futures::stream::unfold((None::<Fingerprint>, 0u64), move |(last, n)| {
        let fingerprint = fingerprint.clone();
        async move {
            loop {
                let f = fingerprint.clone();
                let now = tokio::task::spawn_blocking(move || f())
                    .await
                    .unwrap_or_default();
                if last.as_ref() != Some(&now) {
                    let event = Event::default().event("change").data(n.to_string());
                    return Some((Ok(event), (Some(now), n + 1)));
                }
                tokio::time::sleep(POLL).await;
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_to_the_llm_log_or_a_tuning_file_moves_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let before = run_fingerprint(dir.path());
        std::fs::write(dir.path().join("llm.jsonl"), "{}\n").unwrap();
        let after_llm = run_fingerprint(dir.path());
        assert_ne!(before, after_llm);
        std::fs::create_dir(dir.path().join("tuning")).unwrap();
        std::fs::write(dir.path().join("tuning/results.jsonl"), "a\n").unwrap();
        let one = run_fingerprint(dir.path());
        std::fs::write(dir.path().join("tuning/results.jsonl"), "a\nb\n").unwrap();
        assert_ne!(one, run_fingerprint(dir.path()), "the length changed");
        assert_eq!(run_fingerprint(dir.path()), run_fingerprint(dir.path()));
        // a reader opening the store leaves an empty WAL behind while it reads: no change
        std::fs::write(dir.path().join("run.sqlite-wal"), "").unwrap();
        assert_eq!(without_wal(&dir), run_fingerprint(dir.path()));
        std::fs::write(dir.path().join("run.sqlite-wal"), "frames").unwrap();
        assert_ne!(
            without_wal(&dir),
            run_fingerprint(dir.path()),
            "a write went to the WAL"
        );
    }

    /// The fingerprint with the WAL as absent.
    fn without_wal(dir: &tempfile::TempDir) -> Fingerprint {
        let wal = dir.path().join("run.sqlite-wal");
        let saved = std::fs::read(&wal).unwrap();
        std::fs::remove_file(&wal).unwrap();
        let fp = run_fingerprint(dir.path());
        std::fs::write(&wal, saved).unwrap();
        fp
    }

    #[test]
    fn a_new_run_moves_the_runs_fingerprint() {
        let base = tempfile::tempdir().unwrap();
        let before = runs_fingerprint(base.path());
        std::fs::create_dir(base.path().join("r1")).unwrap();
        std::fs::write(base.path().join("r1/run.json"), "{}").unwrap();
        assert_ne!(before, runs_fingerprint(base.path()));
    }
}
