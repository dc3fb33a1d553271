//! What the Python probe's answer depends on, so that a cached answer can be checked with a few `stat` calls
//! instead of starting the interpreter: the files and directories it looked at, each with its state then.
//!
//! A directory's modification time changes when an entry is added or removed in it, so watching every
//! directory on the interpreter's `sys.path` (and its user site, which exists or not) notices a numpy installed,
//! upgraded or removed anywhere the interpreter would look. An interpreter given as a wrapper (a pyenv shim
//! picks its Python from the working directory and `PYENV_VERSION`) cannot be watched this way: its answer is
//! never cached.

use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The state of one path when the probe ran; two differ when the file or directory was replaced or modified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileStamp {
    /// The path with links resolved (a re-pointed `python3` link changes it).
    real: PathBuf,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    inode: (u64, u64),
}

impl FileStamp {
    /// The state of `path` now (following links), or None when it does not exist or cannot be read.
    pub(crate) fn of(path: &Path) -> Option<FileStamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            real: path.canonicalize().ok()?,
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            inode: (meta.dev(), meta.ino()),
        })
    }
}

/// The paths one lookup of an interpreter depended on, collected while it runs.
#[derive(Debug, Default)]
pub(crate) struct Watched {
    /// False for a lookup nobody caches (`kt doctor`): nothing is collected.
    enabled: bool,
    /// The PATH the interpreter's name is looked up in.
    path_var: Option<OsString>,
    paths: Vec<PathBuf>,
    /// Set when the answer depends on something not watched: it must not be cached.
    unsure: bool,
}

impl Watched {
    /// Collects what a lookup depends on, resolving interpreter names through `path_var`.
    pub(crate) fn new(path_var: Option<OsString>) -> Watched {
        Watched {
            enabled: true,
            path_var,
            ..Watched::default()
        }
    }

    /// Collects nothing (the lookup is not cached).
    pub(crate) fn off() -> Watched {
        Watched::default()
    }

    pub(crate) fn add(&mut self, path: impl Into<PathBuf>) {
        let path = path.into();
        if self.enabled && path.is_absolute() && !self.paths.contains(&path) {
            self.paths.push(path);
        }
    }

    /// The answer cannot be cached (`why` goes to the debug log).
    pub(crate) fn unsure(&mut self, why: &str) {
        if self.enabled && !self.unsure {
            tracing::debug!("the Python probe's answer is not cached: {why}");
            self.unsure = true;
        }
    }

    /// Each path with its state now, or None when the answer must not be cached.
    pub(crate) fn stamps(self) -> Option<Vec<(PathBuf, Option<FileStamp>)>> {
        if !self.enabled || self.unsure {
            return None;
        }
        let stamps = self.paths.into_iter().map(|p| {
            let stamp = FileStamp::of(&p);
            (p, stamp)
        });
        Some(stamps.collect())
    }

    /// Records that `python` (a name or a path, as given) ran and said its binary is `executable`: the
    /// answer can be cached only when the two are the same file, i.e. `python` is no wrapper that chooses.
    pub(crate) fn interpreter(&mut self, python: &str, executable: &Path) {
        if !self.enabled {
            return;
        }
        match resolve_command(python, self.path_var.as_deref()) {
            Some(given) if same_file(&given, executable) => {
                self.add(given);
                self.add(executable);
            }
            Some(given) => self.unsure(&format!(
                "{} runs {} (a wrapper such as a pyenv shim; set KT_PYTHON to the interpreter itself)",
                given.display(),
                executable.display()
            )),
            None => self.unsure(&format!("{python} is not found on PATH")),
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Where a command runs from, as the system finds it: a name with a slash as it is (made absolute), else the
/// first executable file of that name in a directory of `path_var`.
pub(crate) fn resolve_command(
    command: &str,
    path_var: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    if command.contains('/') {
        return std::path::absolute(command).ok();
    }
    if command.is_empty() {
        return None;
    }
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modified_file_has_a_different_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "a").unwrap();
        let before = FileStamp::of(&file).unwrap();
        assert_eq!(FileStamp::of(&file), Some(before.clone()));
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(t)
            .unwrap();
        assert_ne!(FileStamp::of(&file), Some(before));
        assert_eq!(FileStamp::of(&dir.path().join("absent")), None);
    }

    #[test]
    fn a_command_is_found_in_the_first_path_directory_that_has_it_executable() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for d in [&a, &b] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("py"), "").unwrap();
        }
        std::fs::set_permissions(b.join("py"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path_var = std::env::join_paths([&a, &b]).unwrap();
        assert_eq!(resolve_command("py", Some(&path_var)), Some(b.join("py")));
        assert_eq!(resolve_command("missing", Some(&path_var)), None);
        assert_eq!(
            resolve_command("/x/python3", None),
            Some(PathBuf::from("/x/python3"))
        );
    }

    #[test]
    fn a_wrapper_that_runs_another_binary_makes_the_answer_uncachable() {
        let dir = tempfile::tempdir().unwrap();
        let (shim, real) = (dir.path().join("shim"), dir.path().join("real"));
        std::fs::write(&shim, "").unwrap();
        std::fs::write(&real, "").unwrap();
        let mut direct = Watched::new(None);
        direct.interpreter(&real.to_string_lossy(), &real);
        assert!(!direct.unsure && direct.paths == vec![real.clone()]);
        let mut wrapped = Watched::new(None);
        wrapped.interpreter(&shim.to_string_lossy(), &real);
        assert!(wrapped.unsure);
        let mut off = Watched::off();
        off.interpreter(&shim.to_string_lossy(), &real);
        assert!(!off.unsure && off.paths.is_empty());
    }
}
