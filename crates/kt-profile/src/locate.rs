//! Finding Nsight Compute's `ncu`: on PATH, in `$CUDA_HOME/bin`, or in `/usr/local/cuda/bin`. Without it
//! kt works as before and says once that profiles are off and why.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where `ncu` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcuPath(pub PathBuf);

impl NcuPath {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// `ncu` was not found; the message lists where kt looked and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct NcuMissing {
    /// Every place looked, in order.
    pub searched: Vec<PathBuf>,
}

impl fmt::Display for NcuMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let places: Vec<String> = self
            .searched
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        write!(
            f,
            "kernel profiles are off: Nsight Compute (ncu) was not found (looked in: {}). Install Nsight \
             Compute (it ships with the CUDA toolkit) and put ncu on PATH or set CUDA_HOME to turn them on",
            if places.is_empty() {
                "nowhere: PATH and CUDA_HOME are unset".into()
            } else {
                places.join(", ")
            }
        )
    }
}

/// The environment the search reads, so tests can give their own.
#[derive(Debug, Clone, Default)]
pub struct SearchPlaces {
    pub path: Option<OsString>,
    pub cuda_home: Option<OsString>,
    /// Searched last (`/usr/local/cuda/bin` on a real machine).
    pub default_dir: Option<PathBuf>,
}

impl SearchPlaces {
    /// This process's PATH and CUDA_HOME, then /usr/local/cuda/bin.
    pub fn from_env() -> Self {
        Self {
            path: std::env::var_os("PATH"),
            cuda_home: std::env::var_os("CUDA_HOME"),
            default_dir: Some(PathBuf::from("/usr/local/cuda/bin")),
        }
    }

    /// The directories to look in, in order.
    fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .path
            .as_ref()
            .map(|p| {
                std::env::split_paths(p)
                    .filter(|d| !d.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        dirs.extend(self.cuda_home.as_ref().map(|h| Path::new(h).join("bin")));
        dirs.extend(self.default_dir.clone());
        dirs
    }
}

/// Looks for `ncu` in this process's environment.
pub fn ncu_availability() -> Result<NcuPath, NcuMissing> {
    find_ncu(&SearchPlaces::from_env())
}

/// Looks for `ncu` in `places`.
pub fn find_ncu(places: &SearchPlaces) -> Result<NcuPath, NcuMissing> {
    let dirs = places.dirs();
    for dir in &dirs {
        let candidate = dir.join("ncu");
        if is_executable(&candidate) {
            return Ok(NcuPath(candidate));
        }
    }
    Err(NcuMissing { searched: dirs })
}

/// [`ncu_availability`], looked up once per process; the first call that finds no ncu logs why (a
/// warning), later calls stay quiet.
pub fn ncu_once() -> Option<&'static NcuPath> {
    static FOUND: OnceLock<Option<NcuPath>> = OnceLock::new();
    FOUND
        .get_or_init(|| match ncu_availability() {
            Ok(path) => {
                tracing::info!(ncu = %path.0.display(), "kernel profiles are on");
                Some(path)
            }
            Err(missing) => {
                tracing::warn!("{missing}");
                None
            }
        })
        .as_ref()
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_ncu(dir: &Path, executable: bool) -> PathBuf {
        let p = dir.join("ncu");
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = if executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        p
    }

    #[test]
    fn path_comes_before_cuda_home_which_comes_before_the_default() {
        let (a, b, c) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        std::fs::create_dir(b.path().join("bin")).unwrap();
        fake_ncu(&b.path().join("bin"), true);
        let in_default = fake_ncu(c.path(), true);
        let places = SearchPlaces {
            path: Some(a.path().as_os_str().to_owned()),
            cuda_home: Some(b.path().as_os_str().to_owned()),
            default_dir: Some(c.path().to_path_buf()),
        };
        assert_eq!(find_ncu(&places).unwrap().0, b.path().join("bin/ncu"));
        let on_path = fake_ncu(a.path(), true);
        assert_eq!(find_ncu(&places).unwrap().0, on_path);
        let only_default = SearchPlaces {
            default_dir: Some(c.path().to_path_buf()),
            ..Default::default()
        };
        assert_eq!(find_ncu(&only_default).unwrap().0, in_default);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_is_not_executable_does_not_count() {
        let dir = tempfile::tempdir().unwrap();
        fake_ncu(dir.path(), false);
        let places = SearchPlaces {
            path: Some(dir.path().as_os_str().to_owned()),
            ..Default::default()
        };
        assert!(find_ncu(&places).is_err());
    }

    #[test]
    fn missing_ncu_says_where_it_looked_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let places = SearchPlaces {
            path: Some(dir.path().as_os_str().to_owned()),
            cuda_home: Some("/opt/cuda".into()),
            default_dir: Some("/usr/local/cuda/bin".into()),
        };
        let msg = find_ncu(&places).unwrap_err().to_string();
        assert!(msg.starts_with("kernel profiles are off"), "{msg}");
        assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
        assert!(
            msg.contains("/opt/cuda/bin") && msg.contains("/usr/local/cuda/bin"),
            "{msg}"
        );
        assert!(msg.contains("CUDA_HOME"), "{msg}");
        let nowhere = find_ncu(&SearchPlaces::default()).unwrap_err().to_string();
        assert!(
            nowhere.contains("PATH and CUDA_HOME are unset"),
            "{nowhere}"
        );
    }
}
