//! `kt resume` of a run handed over from a clone at another path: run.json records the kernel file and its
//! header directories as absolute paths of the old clone. Each one missing here is looked for at the same path
//! under the current directory (the repository's root), and run.json is pointed at what was found, so every
//! stage reads the same place; `--include DIR` names the header directories outright. A header directory that
//! is needed (the kernel has `#include "…"`) and found nowhere stops the resume with the flag that fixes it.

use std::path::{Path, PathBuf};

use kt_pipeline::run_llm_file::under;
use kt_pipeline::{RunDir, RunMeta};

/// Points `meta` (and the run's run.json) at this machine's kernel file and header directories; `include`:
/// the resume's `--include` directories, which replace the recorded ones.
pub fn relocate(
    dir: &RunDir,
    meta: &mut RunMeta,
    include: &[PathBuf],
    cwd: &Path,
) -> anyhow::Result<()> {
    let mut changed = false;
    let kernel = PathBuf::from(&meta.kernel_file);
    // the kernel file's own directory is recorded as its first header directory: it moves with the file
    let old_own_dir = own_dir(&meta.kernel_file);
    if !kernel.exists()
        && let Some(found) = under(&kernel, cwd)
    {
        eprintln!(
            "the run's kernel file {} is not here; using {} (the same path under {})",
            kernel.display(),
            found.display(),
            cwd.display()
        );
        meta.kernel_file = found.display().to_string();
        changed = true;
    }
    let own_dir = own_dir(&meta.kernel_file);
    if !include.is_empty() {
        let given = include.iter().map(std::path::absolute);
        let dirs = own_dir
            .filter(|d| d.is_dir())
            .into_iter()
            .map(Ok)
            .chain(given)
            .collect::<Result<Vec<_>, _>>()?;
        meta.settings.include_dirs = dirs.iter().map(|d| d.display().to_string()).collect();
        changed = true;
    } else {
        let mut missing = Vec::new();
        for recorded in &mut meta.settings.include_dirs {
            let path = PathBuf::from(&*recorded);
            if path.is_dir() {
                continue;
            }
            let moved_with_kernel = (Some(&path) == old_own_dir.as_ref())
                .then(|| own_dir.clone())
                .flatten();
            match moved_with_kernel
                .filter(|p| p.is_dir())
                .or_else(|| under(&path, cwd))
                .filter(|p| p.is_dir())
            {
                Some(found) => {
                    eprintln!(
                        "the run's header directory {} is not here; using {}",
                        path.display(),
                        found.display()
                    );
                    *recorded = found.display().to_string();
                    changed = true;
                }
                None => missing.push(path),
            }
        }
        if !missing.is_empty() && has_user_includes(&dir.input_cu()) {
            anyhow::bail!(
                "the run's kernel includes its own headers, and the header directories it recorded are not on \
                 this machine: {} (was the repository moved?). Run kt resume from the repository's root, or name \
                 where they are now with `kt resume {} --include DIR` (repeatable)",
                missing
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                dir.root().display()
            );
        }
    }
    if changed {
        dir.write_meta(meta)?;
    }
    Ok(())
}

/// The directory of the kernel file `kernel_file`, absolute (as run.json records it among the header
/// directories).
fn own_dir(kernel_file: &str) -> Option<PathBuf> {
    Path::new(kernel_file)
        .parent()
        .and_then(|p| std::path::absolute(p).ok())
}

/// The run's copy of the kernel file `#include`s a header of its own (`#include "…"`), which only its header
/// directories hold.
fn has_user_includes(input_cu: &Path) -> bool {
    std::fs::read_to_string(input_cu).is_ok_and(|text| {
        text.lines().any(|l| {
            l.trim_start().strip_prefix('#').is_some_and(|rest| {
                rest.trim_start()
                    .strip_prefix("include")
                    .is_some_and(|r| r.trim_start().starts_with('"'))
            })
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_include_is_a_user_header_and_an_angled_one_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let input = tmp.path().join("input.cu");
        std::fs::write(&input, "#include <cuda_fp16.h>\n__global__ void k() {}\n").unwrap();
        assert!(!has_user_includes(&input));
        std::fs::write(
            &input,
            "  #  include \"tile.cuh\"\n__global__ void k() {}\n",
        )
        .unwrap();
        assert!(has_user_includes(&input));
        assert!(!has_user_includes(&tmp.path().join("none.cu")));
    }
}
