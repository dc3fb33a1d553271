//! The file a run's recorded LLM reads (a `replay:` cassette, a `scripted:` answer script), found again when
//! the run was handed to another machine or clone: run.json records it as an absolute path, which names the
//! old place. The same path under the repository at hand (the current directory) is taken when it is there;
//! otherwise the error says which flag names it.

use std::path::{Path, PathBuf};

use kt_llm::{LlmConfig, LlmError};

/// Providers whose recorded path must exist when the run continues (a `manual:` directory is made anew).
const FILE_PROVIDERS: [&str; 2] = ["replay", "scripted"];

/// Points `config` at its file's new place when the recorded one is gone; an error naming `--llm` when it
/// cannot be found.
pub fn find_recorded_file(config: &mut LlmConfig, spec: &str, cwd: &Path) -> Result<(), LlmError> {
    let provider = config.provider.as_deref().unwrap_or_default();
    let Some(path) = config.path.clone() else {
        return Ok(());
    };
    if !FILE_PROVIDERS.contains(&provider) || path.exists() {
        return Ok(());
    }
    match under(&path, cwd) {
        Some(found) => {
            tracing::warn!(
                "the run's recorded LLM file {} is not here; using {} (the same path under {})",
                path.display(),
                found.display(),
                cwd.display()
            );
            config.path = Some(found);
            Ok(())
        }
        None => Err(LlmError::Config {
            detail: format!(
                "the run recorded the LLM `{spec}`, whose file {} is not on this machine (was the run or the \
                 repository moved?)",
                path.display()
            ),
            fix: format!(
                "name where it is now with --llm {provider}:FILE (a run's own cassette is RUN/llm.jsonl), or \
                 continue with a live model, --llm PROVIDER:MODEL"
            ),
        }),
    }
}

/// The longest tail of `path` that exists under `cwd` (`/old/clone/kt-runs/R/llm.jsonl` is
/// `cwd/kt-runs/R/llm.jsonl` in this clone): where a file or directory a run recorded in another clone is in
/// this one. Also used for the run's kernel file and header directories (`kt resume`).
pub fn under(path: &Path, cwd: &Path) -> Option<PathBuf> {
    let parts: Vec<_> = path.components().collect();
    (1..parts.len()).find_map(|i| {
        let candidate = cwd.join(parts[i..].iter().collect::<PathBuf>());
        candidate.exists().then_some(candidate)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn replay(path: &Path) -> LlmConfig {
        LlmConfig {
            provider: Some("replay".into()),
            path: Some(path.to_path_buf()),
            ..LlmConfig::default()
        }
    }

    #[test]
    fn a_moved_cassette_is_found_under_the_repository_at_hand_or_the_error_names_the_flag() {
        let clone = tempfile::tempdir().unwrap();
        let cassette = clone.path().join("kt-runs/r1/llm.jsonl");
        std::fs::create_dir_all(cassette.parent().unwrap()).unwrap();
        std::fs::write(&cassette, "").unwrap();
        let mut config = replay(Path::new("/elsewhere/old-clone/kt-runs/r1/llm.jsonl"));
        find_recorded_file(
            &mut config,
            "replay:/elsewhere/old-clone/kt-runs/r1/llm.jsonl",
            clone.path(),
        )
        .unwrap();
        assert_eq!(config.path.as_deref(), Some(cassette.as_path()));

        let mut gone = replay(Path::new("/elsewhere/old-clone/kt-runs/r2/llm.jsonl"));
        let err = find_recorded_file(&mut gone, "replay:/x", clone.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--llm replay:FILE") && err.contains("not on this machine"),
            "{err}"
        );

        let mut here = replay(&cassette);
        find_recorded_file(&mut here, "replay:x", Path::new("/")).unwrap();
        assert_eq!(
            here.path.as_deref(),
            Some(cassette.as_path()),
            "a file that is there stays"
        );
    }
}
