//! A `kt.toml` in the working directory is trusted like a program: its `[llm]` section can run a command
//! (`provider = "exec"`) and send the API key to any `base_url`. Like git's `safe.directory`, kt reads it only
//! when the current user (or root) owns it and no one else may write it; otherwise it says why and how to trust
//! it (`KT_SAFE_DIRECTORY`, a `:`-separated list of directories, or `*`).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::LlmError;

/// The environment variable that names directories whose `kt.toml` is trusted whoever owns it.
pub const SAFE_DIRECTORY_ENV: &str = "KT_SAFE_DIRECTORY";

/// Refuses `file` (a `kt.toml` found in the working directory) unless it is safe to read; see the module
/// documentation.
pub fn check(file: &Path) -> Result<(), LlmError> {
    let meta = std::fs::metadata(file)
        .map_err(|e| LlmError::io(file, "checking the owner of the configuration", e))?;
    let me = nix::unistd::geteuid().as_raw();
    let problem = if meta.uid() != me && meta.uid() != 0 {
        Some(format!(
            "it is owned by uid {}, not by you (uid {me})",
            meta.uid()
        ))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!(
            "other users may write it (mode {:o})",
            meta.mode() & 0o777
        ))
    } else {
        None
    };
    let Some(problem) = problem else {
        return Ok(());
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    if trusted(dir) {
        return Ok(());
    }
    Err(LlmError::Config {
        detail: format!(
            "refusing {}: {problem}; a kt.toml can run a command and send your API key to its base_url",
            file.display()
        ),
        fix: format!(
            "read it first; if you trust it, run with {SAFE_DIRECTORY_ENV}={} (or make it yours: chown, chmod go-w), \
             or run kt from another directory",
            dir.display()
        ),
    })
}

/// Whether `KT_SAFE_DIRECTORY` names `dir` (or is `*`).
fn trusted(dir: &Path) -> bool {
    let Some(list) = std::env::var_os(SAFE_DIRECTORY_ENV) else {
        return false;
    };
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    std::env::split_paths(&list)
        .any(|entry| entry.as_os_str() == "*" || entry.canonicalize().is_ok_and(|e| e == real))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_kt_toml_others_may_write_is_refused_and_says_how_to_trust_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kt.toml");
        std::fs::write(
            &file,
            "[llm]\nprovider = \"exec\"\ncommand = \"sh evil.sh\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(check(&file).is_ok(), "the user's own file");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let text = check(&file).unwrap_err().to_string();
        assert!(text.contains("other users may write it"), "{text}");
        assert!(text.contains(SAFE_DIRECTORY_ENV), "{text}");
    }

    #[test]
    fn a_kt_toml_of_another_user_is_refused_when_root_can_make_one() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kt.toml");
        std::fs::write(&file, "[llm]\n").unwrap();
        nix::unistd::chown(&file, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
        let text = check(&file).unwrap_err().to_string();
        assert!(text.contains("owned by uid 4242"), "{text}");
    }
}
