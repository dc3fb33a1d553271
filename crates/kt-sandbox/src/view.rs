//! The sandboxed program's view of the file system, built in its own mount namespace.
//!
//! With a private /tmp the whole host tree is made read-only first (one recursive `mount_setattr`), so no host
//! directory, world-writable scratch space included, takes a write; only the fresh tmpfs mounts and the work
//! directory (bound back writable) do. Then three problems, one mechanism (a tmpfs over a directory, then read-only or writable bind mounts of what must stay
//! visible under it):
//! - world-writable directories (/tmp, /var/tmp, /dev/shm) would let an unprivileged program leave files behind:
//!   each gets a fresh private tmpfs;
//! - the user's home, /root, the sources and kt's runs (the policy's hidden paths) must not be readable: each is
//!   replaced by an empty tmpfs;
//! - a directory the unprivileged uid cannot enter (a Python installed under /root, mode 0700) would make the
//!   interpreter unusable: the directory is replaced by an empty tmpfs that holds only bind mounts of the paths
//!   the program needs, so it can run Python without seeing anything else of /root.
//!
//! The child opens every kept path (`O_PATH`) right after entering its mount namespace and before mounting any
//! tmpfs, then bind-mounts `/proc/self/fd/N`, so no path is resolved after a tmpfs has covered it.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::confine::{BindSource, MountOp};
use crate::error::SandboxError;

/// The mount steps for the child.
#[derive(Debug, Default)]
pub(crate) struct View {
    pub ops: Vec<MountOp>,
    /// Make every host mount read-only before the steps (the work directory is bound back writable).
    pub read_only_host: bool,
}

/// World-writable places (and /run, where sockets and lock files live) that get a private tmpfs.
const PRIVATE_TMP_DIRS: [&str; 4] = ["/tmp", "/var/tmp", "/run", "/dev/shm"];

/// Plans the view. `unprivileged` says whether the program runs as a uid that depends on "other" permission bits
/// (then inaccessible ancestors of needed paths are masked). `hidden` are hidden with a private /tmp (paths that do
/// not exist are skipped); the host is then read-only.
pub(crate) fn plan(
    workdir: &Path,
    readable: &[PathBuf],
    hidden: &[PathBuf],
    private_tmp: bool,
    unprivileged: bool,
) -> Result<View, SandboxError> {
    let mut hides: BTreeSet<PathBuf> = BTreeSet::new();
    if private_tmp {
        for dir in hidden {
            if let Ok(real) = dir.canonicalize()
                && real.is_dir()
                && real != Path::new("/")
            {
                hides.insert(real);
            }
        }
    }
    let mut tmp_hides: BTreeSet<PathBuf> = BTreeSet::new();
    if private_tmp {
        for dir in PRIVATE_TMP_DIRS {
            if let Ok(real) = Path::new(dir).canonicalize()
                && real.is_dir()
                && real != Path::new("/")
            {
                tmp_hides.insert(real);
            }
        }
    }
    let mut keeps: Vec<(PathBuf, bool)> = Vec::new();
    for path in readable {
        let real = path
            .canonicalize()
            .map_err(|source| SandboxError::ReadablePath {
                path: path.clone(),
                source,
            })?;
        if unprivileged && let Some(blocker) = first_closed_ancestor(&real) {
            hides.insert(blocker);
        }
        // Kept read-only wherever it lies: under a closed directory or under a private /tmp (an interpreter
        // provisioned under HOME=/tmp/..., as in containers, batch jobs and tests).
        keeps.push((real, true));
    }
    if unprivileged && let Some(blocker) = first_closed_ancestor(workdir) {
        hides.insert(blocker);
    }
    hides.extend(tmp_hides.iter().cloned());
    // Keep only the topmost of nested hides: a tmpfs inside a tmpfs would need its mount point created first.
    let all: Vec<PathBuf> = hides.iter().cloned().collect();
    hides.retain(|h| !all.iter().any(|o| o != h && h.starts_with(o)));
    // Under a hide it would vanish; on a read-only host it would be read-only: bound back writable either way.
    if (private_tmp && workdir != Path::new("/")) || hides.iter().any(|h| workdir.starts_with(h)) {
        keeps.push((workdir.to_path_buf(), false));
    }
    // A kept path that is itself a private /tmp is bound back over it (the program then sees it read-only).
    keeps.retain(|(k, ro)| {
        let under = hides.iter().any(|h| k.starts_with(h));
        (under || (private_tmp && !ro)) && (tmp_hides.contains(k) || !hides.contains(k))
    });
    // A kept path inside another kept path with the same access is already visible through the outer bind mount;
    // one with other access is bound after it (outer paths first).
    keeps.sort();
    keeps.dedup();
    let kept = keeps.clone();
    keeps.retain(|(k, ro)| {
        !kept
            .iter()
            .any(|(o, oro)| o != k && k.starts_with(o) && ro == oro)
    });
    keeps.sort_by_key(|(k, _)| k.components().count());

    let mut view = View {
        read_only_host: private_tmp,
        ..View::default()
    };
    for hide in &hides {
        let data = if tmp_hides.contains(hide) {
            "mode=1777,size=64m"
        } else {
            "mode=0755,size=1m"
        };
        view.ops.push(MountOp::Tmpfs {
            target: cstring(hide)?,
            data: cstring(Path::new(data))?,
        });
    }
    for (keep, readonly) in keeps {
        // (the writable work directory on a read-only host needs no hide: it is bound onto itself)
        if let Some(hide) = hides.iter().find(|h| keep.starts_with(h)) {
            let mut dir = hide.clone();
            if let Ok(rest) = keep.strip_prefix(hide) {
                for part in rest.components() {
                    dir.push(part);
                    view.ops.push(MountOp::Mkdir {
                        path: cstring(&dir)?,
                    });
                }
            }
        }
        let path = cstring(&keep)?;
        view.ops.push(MountOp::Bind {
            source: path.clone(),
            target: path,
            readonly,
            fd: BindSource::default(),
        });
    }
    for hide in hides.iter().filter(|h| !tmp_hides.contains(*h)) {
        view.ops.push(MountOp::ReadOnly {
            target: cstring(hide)?,
        });
    }
    Ok(view)
}

/// The first directory on the way to `path` (excluding `/`) that "other" may not enter (no o+x).
fn first_closed_ancestor(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .skip(1)
        .filter(|p| *p != path)
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 == 0))
        .map(Path::to_path_buf)
}

fn cstring(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::ReadablePath {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "path contains a NUL byte"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(view: &View) -> Vec<String> {
        view.ops
            .iter()
            .map(|op| match op {
                MountOp::Tmpfs { target, .. } => format!("tmpfs {}", target.to_string_lossy()),
                MountOp::Mkdir { path } => format!("mkdir {}", path.to_string_lossy()),
                MountOp::Proc => "proc /proc".to_string(),
                MountOp::ReadOnly { target } => format!("read-only {}", target.to_string_lossy()),
                MountOp::Bind {
                    target, readonly, ..
                } => format!(
                    "bind{} {}",
                    if *readonly { "-ro" } else { "" },
                    target.to_string_lossy()
                ),
            })
            .collect()
    }

    #[test]
    fn a_work_directory_in_tmp_stays_visible_inside_the_private_tmp() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().canonicalize().unwrap();
        let view = plan(&work, &[], &[], true, true).unwrap();
        let ops = targets(&view);
        let tmp = Path::new("/tmp").canonicalize().unwrap();
        assert!(ops.contains(&format!("tmpfs {}", tmp.display())), "{ops:?}");
        assert!(ops.contains(&format!("bind {}", work.display())), "{ops:?}");
    }

    #[test]
    fn an_interpreter_under_tmp_is_bound_back_read_only_into_the_private_tmp_for_any_user() {
        let home = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let venv = home
            .path()
            .canonicalize()
            .unwrap()
            .join(".local/share/kt/venv");
        std::fs::create_dir_all(venv.join("lib")).unwrap();
        let tmp = Path::new("/tmp").canonicalize().unwrap();
        for unprivileged in [false, true] {
            let readable = [venv.clone(), venv.join("lib")];
            let ops = targets(&plan(Path::new("/"), &readable, &[], true, unprivileged).unwrap());
            assert!(ops.contains(&format!("tmpfs {}", tmp.display())), "{ops:?}");
            let binds: Vec<&String> = ops.iter().filter(|o| o.starts_with("bind")).collect();
            assert_eq!(binds, [&format!("bind-ro {}", venv.display())], "{ops:?}");
        }
    }

    #[test]
    fn hidden_directories_become_empty_with_the_interpreter_bound_back_and_the_host_read_only() {
        let dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let venv = home.join(".local/venv");
        let sources = root.join("src");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(&venv).unwrap();
        std::fs::create_dir_all(&sources).unwrap();
        let work = root.join("work");
        std::fs::create_dir(&work).unwrap();
        let hidden = [home.clone(), sources.clone(), root.join("missing")];
        let view = plan(&work, std::slice::from_ref(&venv), &hidden, true, false).unwrap();
        assert!(view.read_only_host);
        let ops = targets(&view);
        // both lie under /tmp, itself hidden: the topmost hide wins, the kept paths are bound into it
        let tmp = Path::new("/tmp").canonicalize().unwrap();
        assert!(ops.contains(&format!("tmpfs {}", tmp.display())), "{ops:?}");
        assert!(
            ops.contains(&format!("bind-ro {}", venv.display())),
            "{ops:?}"
        );
        assert!(ops.contains(&format!("bind {}", work.display())), "{ops:?}");
        assert!(!ops.iter().any(|o| o.contains(".ssh")), "{ops:?}");
        // outside /tmp: each hidden directory gets its own tmpfs; no private /tmp, no hiding, no read-only host
        let plain = plan(&work, &[], &hidden, false, false).unwrap();
        assert!(plain.ops.is_empty() && !plain.read_only_host);
    }

    #[test]
    fn a_hidden_directory_outside_tmp_gets_its_own_tmpfs_and_the_work_directory_stays_writable() {
        // (the plan only looks at the directories: nothing is mounted)
        let outside = tempfile::Builder::new()
            .prefix(".view-test")
            .tempdir_in(env!("CARGO_MANIFEST_DIR"))
            .unwrap();
        let home = outside.path().canonicalize().unwrap();
        std::fs::create_dir(home.join(".ssh")).unwrap();
        let work = tempfile::tempdir().unwrap();
        let work = work.path().canonicalize().unwrap();
        let ops = targets(&plan(&work, &[], std::slice::from_ref(&home), true, false).unwrap());
        assert!(
            ops.contains(&format!("tmpfs {}", home.display())),
            "{ops:?}"
        );
        assert!(ops.contains(&format!("bind {}", work.display())), "{ops:?}");
    }

    #[test]
    fn a_readable_path_under_a_closed_directory_is_bound_read_only_into_an_empty_tmpfs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let closed = dir.path().join("home");
        let inner = closed.join("py/lib");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        let closed = closed.canonicalize().unwrap();
        let view = plan(
            Path::new("/"),
            std::slice::from_ref(&inner),
            &[],
            false,
            true,
        )
        .unwrap();
        let ops = targets(&view);
        let inner = inner.canonicalize().unwrap();
        assert_eq!(
            ops,
            [
                format!("tmpfs {}", closed.display()),
                format!("mkdir {}", closed.join("py").display()),
                format!("mkdir {}", inner.display()),
                format!("bind-ro {}", inner.display()),
                format!("read-only {}", closed.display()),
            ]
        );
    }
}
