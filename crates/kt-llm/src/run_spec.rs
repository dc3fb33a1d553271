//! What a run keeps of its LLM so that a later command, on this machine or another, reaches the same one: the
//! `--llm` form (`openai:gpt-4.1`, `replay:/abs/cassette.jsonl`, `exec:COMMAND`) and the base URL, never a key
//! (keys stay in the environment). And the one order in which a command's LLM is put together from the
//! configuration file, the environment, a spec (a run's, or `--llm`) and `KT_LLM_BASE_URL`.

use std::path::Path;

use crate::config::{Kind, LlmConfig, preset};
use crate::error::LlmError;

/// The environment variable that points an HTTP provider at another server (`--llm` does not override it).
pub const BASE_URL_ENV: &str = "KT_LLM_BASE_URL";

impl LlmConfig {
    /// The `--llm` form that reaches this configuration's LLM again (file paths made absolute, so another
    /// working directory finds them), or `None` when no provider is chosen. Never holds a key.
    pub fn spec(&self) -> Option<String> {
        let name = self.provider.as_deref()?;
        let rest = match preset(name).map(|p| p.kind) {
            Some(Kind::OpenAi | Kind::Anthropic) => self.model.clone(),
            Some(Kind::Exec) => self.command.clone(),
            Some(Kind::Scripted | Kind::Replay | Kind::Manual) => self
                .path
                .as_ref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                .map(|p| p.display().to_string()),
            None => None,
        };
        Some(match rest {
            Some(rest) if !rest.is_empty() => format!("{name}:{rest}"),
            _ => name.to_string(),
        })
    }

    /// The base URL worth recording: only an HTTP provider's, and only when one is set.
    pub fn recorded_base_url(&self) -> Option<String> {
        self.is_http().then(|| self.base_url.clone()).flatten()
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

    #[test]
    fn a_spec_round_trips_model_and_command_and_makes_paths_absolute_without_the_key() {
        for spec in ["openai:gpt-4.1", "ollama:qwen3:8b", "exec:ollama run qwen3"] {
            let mut cfg = LlmConfig::parse_spec(spec).unwrap();
            cfg.api_key_env = Some("SECRET_ENV".into());
            cfg.api_key = Some(crate::ApiKey::new("sk-secret"));
            assert_eq!(cfg.spec().as_deref(), Some(spec));
        }
        let replay = LlmConfig::parse_spec("replay:cassettes/a.jsonl")
            .unwrap()
            .spec()
            .unwrap();
        let path = replay.strip_prefix("replay:").unwrap();
        assert!(Path::new(path).is_absolute(), "{replay}");
        assert!(path.ends_with("cassettes/a.jsonl"), "{replay}");
        assert_eq!(LlmConfig::default().spec(), None);
        assert_eq!(
            LlmConfig::parse_spec("manual").unwrap().spec().as_deref(),
            Some("manual")
        );
    }

    #[test]
    fn a_base_url_is_recorded_for_http_providers_only() {
        let mut http = LlmConfig::parse_spec("vllm:qwen").unwrap();
        http.base_url = Some("http://gpu-node:8000/v1".into());
        assert_eq!(
            http.recorded_base_url().as_deref(),
            Some("http://gpu-node:8000/v1")
        );
        let mut file = LlmConfig::parse_spec("replay:x.jsonl").unwrap();
        file.base_url = Some("http://ignored".into());
        assert_eq!(file.recorded_base_url(), None);
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
