//! The Python probe's answer kept across runs. Starting python3 and importing numpy costs about a second, on
//! the path of every `kt transform`; the answer only changes when the interpreter or what it imports changes.
//! An entry per interpreter as given (`KT_PYTHON`, else `python3` found on PATH), in
//! `$KT_PYTHON_PROBE_CACHE` (`off`: no cache), else `$XDG_CACHE_HOME/kt/python-probe`, else
//! `~/.cache/kt/python-probe`. An entry holds the answer and the state of every file and directory it depends
//! on (`watch.rs`); it is used only while a `stat` of each finds the same state. A file that cannot
//! be read is a miss, a failed write only costs the next run a probe: neither is an error for the user.

use std::path::{Path, PathBuf};

use kt_record::atomic_write::write_atomically;
use serde::{Deserialize, Serialize};

use super::watch::{FileStamp, Watched, resolve_command};
use super::{Lookup, PythonError, PythonRuntime};

/// Bumped when an entry's meaning changes, so that older entries are misses.
const FORMAT: u32 = 1;

pub(crate) struct ProbeCache {
    dir: PathBuf,
}

/// One cached answer: what it was asked, what it depends on, what it said.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    /// Each path with its state when the probe ran; None: it did not exist.
    watched: Vec<(PathBuf, Option<FileStamp>)>,
    runtime: PythonRuntime,
}

impl ProbeCache {
    /// The cache the environment asks for, or None when `KT_PYTHON_PROBE_CACHE=off` or no HOME is known.
    pub(crate) fn from_env() -> Option<ProbeCache> {
        crate::cache_dir::kt_cache_dir("KT_PYTHON_PROBE_CACHE", "python-probe")
            .map(ProbeCache::in_dir)
    }

    pub(crate) fn in_dir(dir: PathBuf) -> ProbeCache {
        ProbeCache { dir }
    }

    /// The cached answer for `lookup` while nothing it depends on changed, else `probe`'s (stored when it is
    /// a runtime that can be watched).
    pub(crate) fn find(
        &self,
        lookup: &Lookup,
        probe: impl FnOnce(&mut Watched) -> Result<PythonRuntime, PythonError>,
    ) -> Result<PythonRuntime, PythonError> {
        let Some(key) = key(lookup) else {
            return probe(&mut Watched::off());
        };
        let file = self.dir.join(file_name(&key));
        if let Some(runtime) = load(&file, &key) {
            tracing::debug!(entry = %file.display(), "Python probe answered from the cache");
            return Ok(runtime);
        }
        let mut watched = Watched::new(lookup.path_var.clone());
        let runtime = probe(&mut watched)?;
        if let Some(watched) = watched.stamps() {
            let runtime = runtime.clone();
            store(
                &file,
                &Entry {
                    key,
                    watched,
                    runtime,
                },
            );
        }
        Ok(runtime)
    }
}

/// Everything the answer depends on besides watched files: the interpreter as given and where it resolves,
/// the probe itself, and the variables Python reads to build its import path. None when the interpreter is
/// not found (the probe then reports it).
fn key(lookup: &Lookup) -> Option<String> {
    let given = match &lookup.kt_python {
        Some(python) => python.to_string_lossy().into_owned(),
        None => "python3".to_string(),
    };
    let resolved = resolve_command(&given, lookup.path_var.as_deref())?;
    let mut key = format!(
        "format {FORMAT}\nprobe {}\n",
        blake3::hash(super::probe::PROBE_SCRIPT.as_bytes())
    );
    match &lookup.kt_python {
        Some(_) => key.push_str(&format!("KT_PYTHON {given}\n")),
        None => key.push_str(&format!("python3, else {}\n", lookup.venv_dir.display())),
    }
    key.push_str(&format!("resolved {}\n", resolved.display()));
    for (name, value) in &lookup.python_env {
        if let Some(value) = value {
            key.push_str(&format!("{name}={}\n", value.to_string_lossy()));
        }
    }
    Some(key)
}

fn file_name(key: &str) -> String {
    let hex = blake3::hash(key.as_bytes()).to_hex();
    format!("{}.json", &hex[..32])
}

fn load(file: &Path, key: &str) -> Option<PythonRuntime> {
    let text = match std::fs::read(file) {
        Ok(text) => text,
        Err(e) => {
            tracing::debug!(entry = %file.display(), "no cached Python probe: {e}");
            return None;
        }
    };
    let entry: Entry = match serde_json::from_slice(&text) {
        Ok(entry) => entry,
        Err(e) => {
            tracing::debug!(entry = %file.display(), "cached Python probe unreadable, probing again: {e}");
            return None;
        }
    };
    if entry.key != key {
        tracing::debug!(entry = %file.display(), "cached Python probe is for another lookup");
        return None;
    }
    if let Some((path, _)) = entry
        .watched
        .iter()
        .find(|(path, stamp)| FileStamp::of(path) != *stamp)
    {
        tracing::debug!(changed = %path.display(), "cached Python probe is out of date");
        return None;
    }
    Some(entry.runtime)
}

/// Writes `entry` to `file` whole or not at all (a temporary file renamed over it).
fn store(file: &Path, entry: &Entry) {
    let written = serde_json::to_vec(entry)
        .map_err(|e| e.to_string())
        .and_then(|bytes| write_atomically(file, &bytes).map_err(|e| e.to_string()));
    if let Err(e) = written {
        tracing::debug!(entry = %file.display(), "Python probe not cached: {e}");
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
