//! What a run keeps of its LLM so that a later command, on this machine or another, reaches the same one: the
//! `--llm` form (`openai:gpt-4.1`, `replay:/abs/cassette.jsonl`, `exec:COMMAND`) and the base URL, never a key
//! (keys stay in the environment); and how that form is read back ([`LlmConfig::parse_spec`]).

use std::path::PathBuf;

use crate::config::LlmConfig;
use crate::error::LlmError;
use crate::preset::{Kind, PROVIDERS, preset};

impl LlmConfig {
    /// Parses the compact form `PROVIDER:MODEL` (`openai:gpt-4.1`, `ollama:qwen3:8b`), `PROVIDER:PATH` for the
    /// file-based providers (`replay:kt-runs/x/llm.jsonl`, `scripted:answers.toml`, `manual:prompts/`) or
    /// `exec:COMMAND` (`exec:ollama run qwen3`).
    pub fn parse_spec(spec: &str) -> Result<LlmConfig, LlmError> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let name = name.trim().to_ascii_lowercase();
        let preset = preset(&name).ok_or_else(|| LlmError::Config {
            detail: format!("unknown LLM provider `{name}` in `{spec}`"),
            fix: format!("use PROVIDER:MODEL with PROVIDER one of {PROVIDERS}"),
        })?;
        let mut cfg = LlmConfig {
            provider: Some(name),
            ..LlmConfig::default()
        };
        let rest = rest.trim();
        if !rest.is_empty() {
            match preset.kind {
                Kind::Scripted | Kind::Replay | Kind::Manual => {
                    cfg.path = Some(PathBuf::from(rest))
                }
                Kind::OpenAi | Kind::Anthropic => cfg.model = Some(rest.to_string()),
                Kind::Exec => cfg.command = Some(rest.to_string()),
            }
        }
        Ok(cfg)
    }

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn compact_spec_names_model_or_path() {
        let c = LlmConfig::parse_spec("openai:gpt-4.1").unwrap();
        assert_eq!(
            (c.provider.as_deref(), c.model.as_deref()),
            (Some("openai"), Some("gpt-4.1"))
        );
        let c = LlmConfig::parse_spec("ollama:qwen3:8b").unwrap();
        assert_eq!(c.model.as_deref(), Some("qwen3:8b"));
        let c = LlmConfig::parse_spec("replay:runs/a/llm.jsonl").unwrap();
        assert_eq!(c.path.as_deref(), Some(Path::new("runs/a/llm.jsonl")));
        assert!(matches!(
            LlmConfig::parse_spec("gpt:4"),
            Err(LlmError::Config { .. })
        ));
    }

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
}
