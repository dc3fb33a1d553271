//! The directory a sandboxed program starts in: a fresh empty one per run unless the caller gives one.

use std::path::{Path, PathBuf};

use crate::error::SandboxError;
use crate::identity::RunIdentity;

/// A work directory. A fresh one is deleted (with everything the program left in it) when dropped.
#[derive(Debug)]
pub struct Workdir {
    path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Workdir {
    /// A new empty directory under the system's temporary directory, readable only by its owner.
    pub fn fresh() -> Result<Self, SandboxError> {
        let temp = tempfile::Builder::new()
            .prefix("kt-sandbox-")
            .tempdir()
            .map_err(|source| SandboxError::Workdir {
                path: std::env::temp_dir(),
                source,
            })?;
        // Canonical, because the mount plan compares it with canonical paths (/tmp may be a symlink).
        let path = temp
            .path()
            .canonicalize()
            .map_err(|source| SandboxError::Workdir {
                path: temp.path().to_path_buf(),
                source,
            })?;
        Ok(Self {
            path,
            _temp: Some(temp),
        })
    }

    /// An existing directory chosen by the caller; it is not deleted afterwards.
    pub fn existing(path: &Path) -> Result<Self, SandboxError> {
        let path = path
            .canonicalize()
            .map_err(|source| SandboxError::Workdir {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self { path, _temp: None })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands the directory to the run's unprivileged identity (owner, mode 0700) so that it is the one place the
    /// program can write. Files kt put there before stay kt's, readable by the program.
    pub(crate) fn grant(&self, identity: RunIdentity) -> Result<(), SandboxError> {
        use std::os::unix::fs::PermissionsExt;
        let err = |source| SandboxError::Workdir {
            path: self.path.clone(),
            source,
        };
        std::os::unix::fs::chown(&self.path, Some(identity.uid), Some(identity.gid))
            .map_err(err)?;
        std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o700)).map_err(err)
    }
}
