//! Tuning progress as it happens, per kernel version: the tuner appends one JSON line per measured
//! configuration to `RUN/tuning/*.jsonl` the moment it is measured (kt-tuner's results cache), so counting
//! those lines shows how far each tuning got before its candidate's checkpoint is written.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use kt_record::{MeasuredConfig, TuningLine};
use serde::Serialize;
use serde_json::Value;

/// The configurations measured so far for one kernel source (the cache's scope).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuningProgress {
    /// The cache file the lines are in.
    pub file: String,
    /// The scope's source hash (one per kernel version and options).
    pub source: String,
    pub measured: usize,
    /// Configurations that did not verify, compile or launch.
    pub failed: usize,
    pub best_ms: Option<f64>,
    /// The best configuration's parameters.
    pub best_config: Option<Value>,
    /// Every verified configuration's time, in the order measured (the distribution chart).
    pub times_ms: Vec<f64>,
}

/// Progress of every tuning whose results are under `dir` (empty when nothing was tuned yet).
pub fn tuning_progress(dir: &Path) -> Vec<TuningProgress> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let mut by_source: BTreeMap<String, TuningProgress> = BTreeMap::new();
        // A line being appended right now may be cut short: skip what does not parse.
        for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
            let Ok(l) = serde_json::from_str::<TuningLine<MeasuredConfig>>(&line) else {
                continue;
            };
            let source = l.scope.source_hash;
            let entry = by_source
                .entry(source.clone())
                .or_insert_with(|| TuningProgress {
                    file: name.clone(),
                    source,
                    measured: 0,
                    failed: 0,
                    best_ms: None,
                    best_config: None,
                    times_ms: Vec::new(),
                });
            let m = l.measurement;
            entry.measured += 1;
            let objective = m.verified_ms();
            entry.times_ms.extend(objective);
            match objective {
                Some(ms) if entry.best_ms.is_none_or(|b| ms < b) => {
                    entry.best_ms = Some(ms);
                    entry.best_config = Some(m.config.clone());
                }
                Some(_) => {}
                None => entry.failed += 1,
            }
        }
        out.extend(by_source.into_values());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_counted_per_source_with_the_best_config() {
        let dir = tempfile::tempdir().unwrap();
        let line = |src: &str, verdict: &str, objective: Option<f64>, bx: i64| {
            json!({"scope": {"device_uuid": "GPU-1", "source_hash": src, "problem": "p"},
                   "measurement": {"config": {"block_size_x": bx}, "verdict": {"kind": verdict}, "objective": objective}})
            .to_string()
        };
        let text = [
            line("a", "ok", Some(2.0), 16),
            line("a", "ok", Some(1.5), 32),
            line("a", "compile_error", None, 64),
            line("b", "ok", Some(3.0), 8),
            "{\"scope\": {\"sou".to_string(),
        ]
        .join("\n");
        std::fs::write(dir.path().join("results.jsonl"), text).unwrap();
        let p = tuning_progress(dir.path());
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p[0].measured, p[0].failed, p[0].best_ms),
            (3, 1, Some(1.5))
        );
        assert_eq!(p[0].best_config, Some(json!({"block_size_x": 32})));
        assert_eq!(p[1].measured, 1);
        assert!(tuning_progress(&dir.path().join("missing")).is_empty());
    }
}
