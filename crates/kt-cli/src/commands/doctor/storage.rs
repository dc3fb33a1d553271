//! Where runs are stored, and whether kt can write there.

use std::path::PathBuf;

use super::Check;

/// The directory that holds run directories: `KT_RUNS_DIR` when set, else `./kt-runs`.
pub fn runs_dir() -> PathBuf {
    std::env::var_os("KT_RUNS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("kt-runs"))
}

pub fn probe() -> Check {
    let dir = runs_dir();
    // The nearest existing ancestor must be writable; creating the directory itself is left to the first run.
    let mut existing = dir.clone();
    while !existing.exists() {
        match existing.parent() {
            Some(p) if !p.as_os_str().is_empty() => existing = p.to_path_buf(),
            _ => {
                existing = PathBuf::from(".");
                break;
            }
        }
    }
    match tempfile::tempfile_in(&existing) {
        Ok(_) => Check::ok("run storage", format!("{} (writable)", dir.display())),
        Err(err) => Check::missing(
            "run storage",
            format!("{} is not writable: {err}", existing.display()),
            "set KT_RUNS_DIR to a writable directory or pass --out",
        ),
    }
}
