//! The run page's data, kept while the run's files stay as they were. Building it reads the run's graph and
//! its latest states, which on a long run takes a good part of a second; a page opened again, its timeline
//! tab (which redraws the summary) or a second browser then get it at once. The key is the same fingerprint
//! the live updates watch ([`crate::live::run_fingerprint`]): taken before the build, so a run that writes
//! while its page is built is built again on the next request rather than shown stale.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::StudioError;
use crate::live::{Fingerprint, run_fingerprint};

/// Runs whose page data is kept (the most recently built ones).
const KEPT_RUNS: usize = 8;

struct Entry<V> {
    built: Option<(Fingerprint, V)>,
    /// Set on each use: the least recently used entry goes first.
    used: u64,
}

impl<V> Default for Entry<V> {
    fn default() -> Self {
        Self {
            built: None,
            used: 0,
        }
    }
}

/// Each run directory's entry, locked while it is built.
type Entries<V> = HashMap<PathBuf, Arc<Mutex<Entry<V>>>>;

/// Page data (`V`: the answer's body) per run directory, with one build at a time per run (a second request
/// waits for the first build instead of doing the same work beside it).
pub struct ViewCache<V> {
    runs: Arc<Mutex<Entries<V>>>,
    clock: Arc<Mutex<u64>>,
}

impl<V> Clone for ViewCache<V> {
    fn clone(&self) -> Self {
        Self {
            runs: self.runs.clone(),
            clock: self.clock.clone(),
        }
    }
}

impl<V> Default for ViewCache<V> {
    fn default() -> Self {
        Self {
            runs: Arc::default(),
            clock: Arc::default(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // a panicked build leaves the entry as it was before the build: still usable
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<V: Clone> ViewCache<V> {
    /// The page data of the run in `dir`: kept, or built by `build` when the run's files moved since.
    pub fn get(
        &self,
        dir: &Path,
        build: impl FnOnce() -> Result<V, StudioError>,
    ) -> Result<V, StudioError> {
        let entry = self.entry(dir);
        let mut entry = lock(&entry);
        entry.used = self.tick();
        let now = run_fingerprint(dir);
        if let Some((fp, value)) = &entry.built
            && *fp == now
        {
            return Ok(value.clone());
        }
        let value = build()?;
        entry.built = Some((now, value.clone()));
        Ok(value)
    }

    fn tick(&self) -> u64 {
        let mut clock = lock(&self.clock);
        *clock += 1;
        *clock
    }

    /// The entry of `dir`, made room for among the [`KEPT_RUNS`] most recently used.
    fn entry(&self, dir: &Path) -> Arc<Mutex<Entry<V>>> {
        let mut runs = lock(&self.runs);
        if !runs.contains_key(dir) && runs.len() >= KEPT_RUNS {
            // an entry being built is locked: it stays, and is counted as just used
            let oldest = runs
                .iter()
                .min_by_key(|(_, e)| e.try_lock().map_or(u64::MAX, |e| e.used))
                .map(|(p, _)| p.clone());
            if let Some(p) = oldest {
                runs.remove(&p);
            }
        }
        runs.entry(dir.to_path_buf()).or_default().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_run_is_built_again_only_when_its_files_move() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run.json"), "{}").unwrap();
        let cache = ViewCache::<Value>::default();
        let mut builds = 0;
        let mut get = |cache: &ViewCache<Value>| {
            cache
                .get(dir.path(), || {
                    builds += 1;
                    Ok(json!({ "build": builds }))
                })
                .unwrap()
        };
        assert_eq!(get(&cache), json!({"build": 1}));
        assert_eq!(get(&cache), json!({"build": 1}), "kept");
        std::fs::write(dir.path().join("llm.jsonl"), "{}\n").unwrap();
        assert_eq!(get(&cache), json!({"build": 2}), "an LLM call was logged");
        assert_eq!(get(&cache), json!({"build": 2}));
    }

    #[test]
    fn a_failed_build_is_not_kept_and_old_runs_make_room() {
        let base = tempfile::tempdir().unwrap();
        let cache = ViewCache::<Value>::default();
        let err = cache.get(base.path(), || {
            Err(StudioError::BadRequest("not yet".into()))
        });
        assert!(err.is_err());
        let ok = cache.get(base.path(), || Ok(json!(1))).unwrap();
        assert_eq!(ok, json!(1), "built once it could be");
        for i in 0..KEPT_RUNS + 3 {
            let dir = base.path().join(format!("r{i}"));
            std::fs::create_dir(&dir).unwrap();
            cache.get(&dir, || Ok(json!(i))).unwrap();
        }
        assert_eq!(lock(&cache.runs).len(), KEPT_RUNS);
        assert!(
            !lock(&cache.runs).contains_key(&base.path().join("r0")),
            "the least recently used went first"
        );
    }
}
