//! Where CUPTI's library is and loading it once per process.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::error::CuptiError;

/// Where CUPTI's library is, found from the parent's environment (the worker's is filtered): the CUDA
/// installations named by CUDA_HOME, CUDA_PATH or CUDA_ROOT, the loader's LD_LIBRARY_PATH, /usr/local/cuda
/// and the distribution's library directory. The message says where it looked.
pub fn find_cupti() -> Result<PathBuf, CuptiError> {
    let dirs = cupti_dirs();
    for dir in &dirs {
        for name in CUPTI_NAMES {
            let path = dir.join(name);
            if path.is_file() {
                return Ok(path);
            }
        }
    }
    Err(CuptiError::NotFound {
        searched: dirs.len(),
    })
}

const CUPTI_NAMES: [&str; 3] = ["libcupti.so.13", "libcupti.so.12", "libcupti.so"];

/// The directories CUPTI ships in, for the CUDA installations kt knows of.
fn cupti_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .collect();
    roots.push("/usr/local/cuda".into());
    let mut dirs = Vec::new();
    for root in roots {
        for sub in [
            "extras/CUPTI/lib64",
            "lib64",
            "targets/x86_64-linux/lib",
            "lib",
        ] {
            dirs.push(root.join(sub));
        }
    }
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&paths));
    }
    dirs.push("/usr/lib/x86_64-linux-gnu".into());
    dirs
}

/// Loads CUPTI from `path` once for the whole process (cudarc then finds it by its soname), with the
/// Perfworks libraries beside it, so that no CUPTI call can fail for want of a library; kept until exit.
pub(super) fn load_cupti(path: &Path) -> Result<(), CuptiError> {
    static LOADED: OnceLock<Result<(), CuptiError>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            if let Some(dir) = path.parent() {
                for helper in ["libnvperf_host.so", "libnvperf_target.so"] {
                    let h = dir.join(helper);
                    // SAFETY: NVIDIA's Perfworks libraries; loading runs only their initialisers.
                    if h.is_file()
                        && let Ok(lib) = unsafe { libloading::Library::new(&h) }
                    {
                        std::mem::forget(lib);
                    }
                }
            }
            // SAFETY: as above; CUPTI's initialisers only register themselves.
            let lib = unsafe { libloading::Library::new(path) }.map_err(|e| CuptiError::Load {
                path: path.to_path_buf(),
                detail: e.to_string(),
            })?;
            std::mem::forget(lib);
            Ok(())
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cupti_search_looks_in_the_cuda_toolkit_layouts() {
        let dirs = cupti_dirs();
        assert!(dirs.contains(&PathBuf::from("/usr/local/cuda/extras/CUPTI/lib64")));
        assert!(dirs.contains(&PathBuf::from("/usr/local/cuda/targets/x86_64-linux/lib")));
    }
}
