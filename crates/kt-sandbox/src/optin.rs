//! The user's opt-in to running generated programs without a network namespace, from a kt configuration file:
//!
//! ```toml
//! [sandbox]
//! allow_unsandboxed = true   # LLM-written programs may then reach the network where no namespace can be made
//! ```
//!
//! The command line's `--allow-unsandboxed` is the other way; either suffices (`Policy::allow_unsandboxed`).
//! The same section sets the generators' work-directory quota (`disk_quota_mb = 20000`; see
//! [`crate::disk_quota`]).

use std::path::Path;

use serde::Deserialize;

use crate::error::SandboxError;

#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(default)]
    sandbox: Section,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    #[serde(default)]
    allow_unsandboxed: bool,
    #[serde(default)]
    disk_quota_mb: Option<u64>,
}

/// The `[sandbox]` section of a configuration file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    pub allow_unsandboxed: bool,
    /// The generators' work-directory quota in MiB, when set.
    pub disk_quota_mb: Option<u64>,
}

/// Whether the configuration file at `path` opts in (`[sandbox] allow_unsandboxed = true`). Other sections are
/// ignored; an unknown key in `[sandbox]` is an error, so a typo does not silently keep the default.
pub fn allow_unsandboxed_in(path: &Path) -> Result<bool, SandboxError> {
    Ok(settings_in(path)?.allow_unsandboxed)
}

/// The `[sandbox]` section of the configuration file at `path` (defaults where it says nothing).
pub fn settings_in(path: &Path) -> Result<SandboxSettings, SandboxError> {
    let err = |detail: String| SandboxError::Config {
        path: path.to_path_buf(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let file: File = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
    Ok(SandboxSettings {
        allow_unsandboxed: file.sandbox.allow_unsandboxed,
        disk_quota_mb: file.sandbox.disk_quota_mb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(text: &str) -> Result<bool, SandboxError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kt.toml");
        std::fs::write(&path, text).unwrap();
        allow_unsandboxed_in(&path)
    }

    #[test]
    fn only_an_explicit_true_in_the_sandbox_section_opts_in() {
        assert!(with("[sandbox]\nallow_unsandboxed = true\n").unwrap());
        assert!(!with("[sandbox]\nallow_unsandboxed = false\n").unwrap());
        assert!(!with("[llm]\nprovider = \"openai\"\nmodel = \"gpt-4.1\"\n").unwrap());
        assert!(!with("").unwrap());
    }

    #[test]
    fn the_disk_quota_is_read_in_mebibytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kt.toml");
        std::fs::write(&path, "[sandbox]\ndisk_quota_mb = 20000\n").unwrap();
        let s = settings_in(&path).unwrap();
        assert_eq!(s.disk_quota_mb, Some(20000));
        let p = crate::policy::Policy::for_generator().with_disk_quota_mb(s.disk_quota_mb);
        assert_eq!(p.disk_quota, Some(20000 << 20));
    }

    #[test]
    fn a_misspelt_key_is_an_error_that_names_the_file() {
        let err = with("[sandbox]\nallow_unsandboxd = true\n").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("kt.toml") && text.contains("allow_unsandboxed"),
            "{text}"
        );
    }
}
