//! Where a command's [`LlmConfig`] comes from, and in what order: the configuration file (`$KT_CONFIG`, else
//! `kt.toml`, else `~/.config/kt/config.toml`), then `KT_LLM`, then a spec (a run's, or `--llm`), then
//! `KT_LLM_BASE_URL`. A `kt.toml` that another user could have written is refused (`safe_directory.rs`).

use std::path::{Path, PathBuf};

use crate::config::LlmConfig;
use crate::error::LlmError;

/// The environment variable that points an HTTP provider at another server (`--llm` does not override it).
pub const BASE_URL_ENV: &str = "KT_LLM_BASE_URL";

impl LlmConfig {
    /// Reads the `[llm]` section of a TOML file (other sections belong to other parts of kt and are ignored).
    pub fn from_file(path: &Path) -> Result<LlmConfig, LlmError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::io(path, "reading the configuration", e))?;
        let invalid = |e: String| LlmError::Config {
            detail: format!("{}: {e}", path.display()),
            fix: "fix the [llm] section (keys: provider, model, base_url, api_key_env, ...)".into(),
        };
        let table: toml::Table = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let Some(llm) = table.get("llm") else {
            return Ok(LlmConfig::default());
        };
        let mut cfg: LlmConfig = llm
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
        // Relative paths in a file are relative to that file, not to wherever kt was started.
        let base = path.parent().unwrap_or(Path::new("."));
        for p in [&mut cfg.path, &mut cfg.prices].into_iter().flatten() {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        Ok(cfg)
    }

    /// The configuration file in effect: `$KT_CONFIG`, else `kt.toml` in `cwd`, else
    /// `$XDG_CONFIG_HOME/kt/config.toml` (default `~/.config/kt/config.toml`). `None` when there is none.
    pub fn find_file(cwd: &Path) -> Result<Option<PathBuf>, LlmError> {
        if let Some(p) = std::env::var_os("KT_CONFIG").filter(|p| !p.is_empty()) {
            let p = PathBuf::from(p);
            if !p.is_file() {
                return Err(LlmError::Config {
                    detail: format!("KT_CONFIG points to {}, which is not a file", p.display()),
                    fix: "fix or unset KT_CONFIG".into(),
                });
            }
            return Ok(Some(p));
        }
        let local = cwd.join("kt.toml");
        if local.is_file() {
            crate::safe_directory::check(&local)?;
            return Ok(Some(local));
        }
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
        Ok(config_home
            .map(|d| d.join("kt").join("config.toml"))
            .filter(|p| p.is_file()))
    }

    /// File (see [`LlmConfig::find_file`]) overlaid with the environment: `KT_LLM` (compact form) and
    /// `KT_LLM_BASE_URL`. Returns the file used, if any.
    pub fn load(cwd: &Path) -> Result<(LlmConfig, Option<PathBuf>), LlmError> {
        let file = Self::find_file(cwd)?;
        let mut cfg = match &file {
            Some(p) => Self::from_file(p)?,
            None => LlmConfig::default(),
        };
        if let Ok(spec) = std::env::var("KT_LLM")
            && !spec.trim().is_empty()
        {
            cfg.overlay(Self::parse_spec(&spec)?);
        }
        if let Some(url) = base_url_from_env() {
            cfg.base_url = Some(url);
        }
        Ok((cfg, file))
    }

    /// The configuration a command uses: the file and `KT_LLM` ([`LlmConfig::load`]), then `spec` (`--llm`,
    /// or the LLM a run recorded), then the base URL: `KT_LLM_BASE_URL` when set, else `base_url`. The URL
    /// comes last so that `KT_LLM_BASE_URL` stays in force when `spec` names another provider (which drops
    /// the file's URL).
    pub fn load_with(
        cwd: &Path,
        spec: Option<&str>,
        base_url: Option<&str>,
    ) -> Result<LlmConfig, LlmError> {
        let (mut config, _file) = LlmConfig::load(cwd)?;
        if let Some(spec) = spec {
            config.overlay(LlmConfig::parse_spec(spec)?);
        }
        if let Some(url) = base_url_from_env().or_else(|| base_url.map(str::to_string)) {
            config.base_url = Some(url);
        }
        Ok(config)
    }
}

/// `KT_LLM_BASE_URL`, when set and not empty.
pub fn base_url_from_env() -> Option<String> {
    std::env::var(BASE_URL_ENV)
        .ok()
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn file_section_is_read_with_paths_relative_to_the_file_and_flags_override() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kt.toml");
        std::fs::write(
            &path,
            "[other]\nx = 1\n[llm]\nprovider = \"vllm\"\nmodel = \"qwen\"\ntemperature = 0.2\nprices = \"p.toml\"\n\
             timeout_secs = 30\n[llm.headers]\nX-Team = \"kt\"\n",
        )
        .unwrap();
        let mut c = LlmConfig::from_file(&path).unwrap();
        assert_eq!(c.prices, Some(dir.path().join("p.toml")));
        assert_eq!(c.timeouts().total, Duration::from_secs(30));
        assert_eq!(c.headers["X-Team"], "kt");
        c.overlay(LlmConfig {
            model: Some("other".into()),
            ..Default::default()
        });
        assert_eq!(
            (c.model.as_deref(), c.temperature),
            (Some("other"), Some(0.2))
        );
        c.overlay(LlmConfig::parse_spec("replay:x.jsonl").unwrap());
        assert_eq!((c.model, c.provider.as_deref()), (None, Some("replay")));
    }

    #[test]
    fn unknown_keys_in_the_section_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kt.toml");
        std::fs::write(&path, "[llm]\nprovdier = \"openai\"\n").unwrap();
        assert!(
            LlmConfig::from_file(&path)
                .unwrap_err()
                .to_string()
                .contains("provdier")
        );
    }

    #[test]
    fn a_spec_keeps_the_given_base_url_over_the_file_of_another_provider() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("kt.toml"),
            "[llm]\nprovider = \"vllm\"\nmodel = \"m\"\nbase_url = \"http://file:1/v1\"\n",
        )
        .unwrap();
        // KT_LLM_BASE_URL is process-wide; this test only reads it, so it holds whatever it holds here.
        let cfg = LlmConfig::load_with(dir.path(), Some("openai:gpt-4.1"), Some("http://run:2/v1"))
            .unwrap();
        let expected = base_url_from_env().unwrap_or_else(|| "http://run:2/v1".into());
        assert_eq!(cfg.base_url.as_deref(), Some(expected.as_str()));
        assert_eq!(cfg.model.as_deref(), Some("gpt-4.1"));
    }
}
