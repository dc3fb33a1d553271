//! The results cache: one JSON line per measured configuration, appended as soon as it is measured, so a
//! killed run loses at most the configuration in flight and a resumed run skips everything already done.
//! Each line carries its scope (device UUID, hash of kernel source + options + name, the tests' identity
//! and the timing policy), so a changed kernel or another GPU never reuses stale results. Results from
//! elsewhere (a Kernel Tuner cache, `export::import`) can be added for reuse; they are never written back.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use crate::error::TunerError;
use crate::model::outcome::Measurement;
use crate::model::space::Config;

/// Which results a line belongs to: kt-record's type, the run directory's schema.
pub use kt_record::TuningScope as CacheScope;

/// One line of the results file, written with the whole measurement.
type Line = kt_record::TuningLine<Measurement>;

pub struct ResultCache {
    /// None: in memory only (no results file, imported results alone).
    path: Option<PathBuf>,
    scope: CacheScope,
    known: HashMap<Config, Measurement>,
}

impl ResultCache {
    /// Opens (or creates) the cache file and loads the lines of this scope. A torn last line (a run killed
    /// mid-write) is skipped.
    pub fn open(path: &Path, scope: CacheScope) -> Result<Self, TunerError> {
        let mut known = HashMap::new();
        if let Ok(f) = std::fs::File::open(path) {
            for line in std::io::BufReader::new(f).lines() {
                let Ok(line) = line else { break };
                if let Ok(l) = serde_json::from_str::<Line>(&line)
                    && l.scope == scope
                {
                    known.insert(l.measurement.config.clone(), l.measurement);
                }
            }
        }
        Ok(ResultCache {
            path: Some(path.to_path_buf()),
            scope,
            known,
        })
    }

    /// A cache without a file: it holds what is added and forgets it at the end of the run.
    pub fn in_memory(scope: CacheScope) -> Self {
        ResultCache {
            path: None,
            scope,
            known: HashMap::new(),
        }
    }

    /// Adds results measured elsewhere for reuse, without writing them to the file. kt's own results win
    /// over them. Returns how many were added.
    pub fn absorb(&mut self, imported: impl IntoIterator<Item = Measurement>) -> usize {
        let mut added = 0;
        for m in imported {
            if let std::collections::hash_map::Entry::Vacant(e) = self.known.entry(m.config.clone())
            {
                e.insert(m);
                added += 1;
            }
        }
        added
    }

    pub fn get(&self, config: &Config) -> Option<&Measurement> {
        self.known.get(config)
    }

    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    pub fn append(&mut self, m: &Measurement) -> Result<(), TunerError> {
        let Some(path) = self.path.clone() else {
            self.known.insert(m.config.clone(), m.clone());
            return Ok(());
        };
        let err = |e: std::io::Error| TunerError::Cache {
            path: path.clone(),
            message: e.to_string(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let line = serde_json::to_string(&Line {
            scope: self.scope.clone(),
            measurement: m.clone(),
        })
        .map_err(|e| TunerError::Cache {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(err)?;
        // one write call per line: appends from one process never interleave mid-line
        f.write_all(format!("{line}\n").as_bytes()).map_err(err)?;
        self.known.insert(m.config.clone(), m.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::outcome::Verdict;

    fn m(x: i64, ms: f64) -> Measurement {
        Measurement::synthetic(Config::ints([("block_size_x", x)]), Verdict::Ok, Some(ms))
    }

    #[test]
    fn resumed_run_finds_finished_configs_and_changed_kernel_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let scope = CacheScope::new("GPU-1", "src", "k", &[], "p");
        let mut c = ResultCache::open(&path, scope.clone()).unwrap();
        c.append(&m(32, 1.5)).unwrap();
        c.append(&m(64, 1.2)).unwrap();
        // a torn line from a killed run
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"scope\":")
            .unwrap();

        let again = ResultCache::open(&path, scope).unwrap();
        assert_eq!(again.len(), 2);
        assert_eq!(
            again.get(&m(64, 0.0).config).unwrap().objective_ms(),
            Some(1.2)
        );

        let changed = ResultCache::open(
            &path,
            CacheScope::new("GPU-1", "src changed", "k", &[], "p"),
        )
        .unwrap();
        assert!(changed.is_empty());
        let other_gpu =
            ResultCache::open(&path, CacheScope::new("GPU-2", "src", "k", &[], "p")).unwrap();
        assert!(other_gpu.is_empty());
    }

    #[test]
    fn imported_results_are_reused_but_kts_own_win_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let scope = CacheScope::new("GPU-1", "src", "k", &[], "p");
        let mut c = ResultCache::open(&path, scope.clone()).unwrap();
        c.append(&m(32, 1.5)).unwrap();
        assert_eq!(c.absorb([m(32, 9.0), m(64, 1.2)]), 1);
        assert_eq!(c.get(&m(32, 0.0).config).unwrap().objective_ms(), Some(1.5));
        assert_eq!(c.get(&m(64, 0.0).config).unwrap().objective_ms(), Some(1.2));
        assert_eq!(ResultCache::open(&path, scope.clone()).unwrap().len(), 1);

        let mut memory = ResultCache::in_memory(scope);
        memory.absorb([m(64, 1.2)]);
        memory.append(&m(128, 2.0)).unwrap();
        assert_eq!(memory.len(), 2);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn float_bool_and_string_values_survive_a_resume() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let scope = CacheScope::new("GPU-1", "src", "k", &[], "p");
        let config = Config(vec![
            ("factor".into(), 1.0.into()),
            ("on".into(), false.into()),
            ("T".into(), "double".into()),
        ]);
        let mut c = ResultCache::open(&path, scope.clone()).unwrap();
        c.append(&Measurement::synthetic(
            config.clone(),
            Verdict::Ok,
            Some(2.5),
        ))
        .unwrap();
        let again = ResultCache::open(&path, scope).unwrap();
        assert_eq!(again.get(&config).unwrap().objective_ms(), Some(2.5));
        // 1.0 is a float, not the integer 1: another configuration
        let other = Config(vec![
            ("factor".into(), 1.into()),
            ("on".into(), false.into()),
            ("T".into(), "double".into()),
        ]);
        assert!(again.get(&other).is_none());
    }
}
