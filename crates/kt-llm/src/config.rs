//! [`LlmConfig`]: which LLM to use and how, as layered from `kt.toml` / `$KT_CONFIG` /
//! `~/.config/kt/config.toml` (`[llm]` section), the environment (`KT_LLM=openai:gpt-4.1`) and command-line
//! flags, in increasing priority (`config_load.rs` reads those sources), and the settings it resolves to:
//! timeouts, retries, parameters. `client_setup.rs` turns it into a ready [`crate::LlmClient`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::preset::{Kind, preset};
use crate::providers::SchemaStyle;
use crate::request::Params;
use crate::retry::RetryPolicy;
use crate::structured::StructuredMode;
use crate::transport::{ApiKey, Timeouts};

/// The `[llm]` section. Every field is optional so that files, environment and flags can be layered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// `openai`, `anthropic`, `scripted`, `replay`, `manual`, `exec`, or a preset of an OpenAI-compatible
    /// server: `together`, `deepseek`, `vllm`, `llama-server`, `ollama`.
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Up to the API version, e.g. `http://127.0.0.1:8080/v1`. Defaults per provider.
    pub base_url: Option<String>,
    /// Environment variable holding the API key (default per provider, e.g. `OPENAI_API_KEY`).
    pub api_key_env: Option<String>,
    /// The key itself. Prefer `api_key_env`: a key in a file is easy to leak. Never written back out.
    #[serde(default, skip_serializing)]
    pub api_key: Option<ApiKey>,
    /// The script (scripted), cassette `llm.jsonl` (replay) or prompt directory (manual).
    pub path: Option<PathBuf>,
    /// The command of the `exec` provider, run through `sh -c` (prompt on stdin, answer on stdout).
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    /// Stream answers (server-sent events; default true): a long generation is then bounded by the idle gap
    /// between chunks and the total, not by a wait for the first byte.
    pub stream: Option<bool>,
    #[serde(alias = "connect_timeout_s")]
    pub connect_timeout_secs: Option<f64>,
    /// Wait for the response headers (default: the total; streamed answers also within the idle limit).
    #[serde(alias = "first_byte_timeout_s")]
    pub first_byte_timeout_secs: Option<f64>,
    /// Limit for one attempt (`total_timeout_s`; default 1800).
    #[serde(alias = "total_timeout_s")]
    pub timeout_secs: Option<f64>,
    /// Longest silence of a streamed answer (`idle_timeout_s`; default 180).
    #[serde(alias = "idle_timeout_s")]
    pub idle_timeout_secs: Option<f64>,
    /// Attempts in all for transient failures (429, 5xx, timeouts, connection errors).
    pub max_attempts: Option<u32>,
    pub backoff_ms: Option<u64>,
    pub max_backoff_ms: Option<u64>,
    /// How often an answer that does not parse is asked for again.
    pub parse_retries: Option<u32>,
    pub structured_mode: Option<StructuredMode>,
    /// How the schema is sent: `json_schema`, `json_object`, `ollama_format`, `tool`, `instruction` (default
    /// per provider, see [`SchemaStyle`]).
    pub schema_style: Option<SchemaStyle>,
    /// The most `max_tokens` the re-ask of a cut-off answer may use (default 32768).
    pub max_tokens_cap: Option<u32>,
    /// Thinking tag pairs, e.g. `[["<think>", "</think>"]]`.
    pub think_tags: Option<Vec<(String, String)>>,
    /// A price table (TOML) that extends the built-in one.
    pub prices: Option<PathBuf>,
    /// `[llm.providers."NAME"]`: settings for one provider, used when it is the one chosen.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, Overrides>,
    /// `[llm.models."NAME"]`: settings for one model, used when it is the one chosen (after the provider's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, Overrides>,
}

/// Settings that may differ per provider or per model: a reasoning model needs longer limits than a chat
/// model on the same server.
///
/// ```toml
/// [llm]
/// provider = "deepseek"
/// model = "deepseek-reasoner"
/// idle_timeout_s = 120
/// total_timeout_s = 900
///
/// [llm.models."deepseek-reasoner"]
/// total_timeout_s = 3600
/// max_tokens = 16384
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    #[serde(alias = "idle_timeout_secs")]
    pub idle_timeout_s: Option<f64>,
    #[serde(alias = "timeout_secs")]
    pub total_timeout_s: Option<f64>,
    #[serde(alias = "first_byte_timeout_secs")]
    pub first_byte_timeout_s: Option<f64>,
    #[serde(alias = "connect_timeout_secs")]
    pub connect_timeout_s: Option<f64>,
    pub stream: Option<bool>,
    pub max_tokens: Option<u32>,
    pub max_tokens_cap: Option<u32>,
    pub schema_style: Option<SchemaStyle>,
}

impl Overrides {
    fn apply(&self, cfg: &mut LlmConfig) {
        let set = |to: &mut Option<f64>, from: Option<f64>| {
            if from.is_some() {
                *to = from;
            }
        };
        set(&mut cfg.idle_timeout_secs, self.idle_timeout_s);
        set(&mut cfg.timeout_secs, self.total_timeout_s);
        set(&mut cfg.first_byte_timeout_secs, self.first_byte_timeout_s);
        set(&mut cfg.connect_timeout_secs, self.connect_timeout_s);
        cfg.stream = self.stream.or(cfg.stream);
        cfg.max_tokens = self.max_tokens.or(cfg.max_tokens);
        cfg.max_tokens_cap = self.max_tokens_cap.or(cfg.max_tokens_cap);
        cfg.schema_style = self.schema_style.or(cfg.schema_style);
    }
}

impl LlmConfig {
    /// Whether a provider is chosen at all.
    pub fn is_configured(&self) -> bool {
        self.provider.is_some()
    }

    /// Replaces every field that `over` sets. Choosing another provider drops the settings that belonged to
    /// the old one (model, URL, key variable, path), so `--llm replay:x` does not inherit a cloud model name.
    pub fn overlay(&mut self, over: LlmConfig) {
        if over.provider.is_some() && over.provider != self.provider {
            self.model = None;
            self.base_url = None;
            self.api_key_env = None;
            self.api_key = None;
            self.path = None;
            self.command = None;
            self.schema_style = None;
        }
        macro_rules! take {
            ($($f:ident),*) => { $( if over.$f.is_some() { self.$f = over.$f; } )* };
        }
        take!(
            provider,
            model,
            base_url,
            api_key_env,
            api_key,
            path,
            command,
            temperature,
            top_p,
            max_tokens,
            seed,
            stream
        );
        take!(
            connect_timeout_secs,
            first_byte_timeout_secs,
            timeout_secs,
            idle_timeout_secs
        );
        take!(
            max_attempts,
            backoff_ms,
            max_backoff_ms,
            parse_retries,
            structured_mode,
            schema_style,
            max_tokens_cap,
            think_tags,
            prices
        );
        self.headers.extend(over.headers);
        self.providers.extend(over.providers);
        self.models.extend(over.models);
    }

    /// One line for humans: `openai gpt-4.1 at https://api.openai.com/v1`.
    pub fn describe(&self) -> String {
        let name = self.provider.as_deref().unwrap_or("none");
        match preset(name).map(|p| p.kind) {
            Some(Kind::OpenAi | Kind::Anthropic) => format!(
                "{name} {} at {}",
                self.model_or_default().unwrap_or("(no model)"),
                self.base_url_or_default()
            ),
            Some(Kind::Exec) => format!("exec `{}`", self.command.as_deref().unwrap_or("")),
            _ => match &self.path {
                Some(p) => format!("{name} {}", p.display()),
                None => name.to_string(),
            },
        }
    }

    pub(crate) fn model_or_default(&self) -> Option<&str> {
        self.model.as_deref().or_else(|| {
            self.provider
                .as_deref()
                .and_then(preset)
                .and_then(|p| p.default_model)
        })
    }

    pub(crate) fn base_url_or_default(&self) -> String {
        self.base_url
            .clone()
            .or_else(|| {
                self.provider
                    .as_deref()
                    .and_then(preset)
                    .map(|p| p.base_url.to_string())
            })
            .unwrap_or_default()
    }

    /// This configuration with the `[llm.providers."NAME"]` section of its provider and then the
    /// `[llm.models."NAME"]` section of its model applied. The other methods resolve by themselves.
    pub fn resolved(&self) -> LlmConfig {
        let mut cfg = self.clone();
        let by_provider = self.provider.as_deref().and_then(|p| self.providers.get(p));
        let by_model = self.model_or_default().and_then(|m| self.models.get(m));
        for o in [by_provider, by_model].into_iter().flatten() {
            o.apply(&mut cfg);
        }
        cfg
    }

    pub fn timeouts(&self) -> Timeouts {
        let cfg = self.resolved();
        let secs = |s: Option<f64>, d: Duration| {
            s.filter(|s| *s > 0.0)
                .map(Duration::from_secs_f64)
                .unwrap_or(d)
        };
        let base = match cfg.timeout_secs.filter(|s| *s > 0.0) {
            Some(t) => Timeouts::with_total(Duration::from_secs_f64(t)),
            None => Timeouts::default(),
        };
        Timeouts {
            connect: secs(cfg.connect_timeout_secs, base.connect),
            first_byte: secs(cfg.first_byte_timeout_secs, base.first_byte),
            total: base.total,
            idle: secs(cfg.idle_timeout_secs, base.idle),
        }
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        let d = RetryPolicy::default();
        RetryPolicy {
            max_attempts: self.max_attempts.unwrap_or(d.max_attempts).max(1),
            base_delay: self
                .backoff_ms
                .map(Duration::from_millis)
                .unwrap_or(d.base_delay),
            max_delay: self
                .max_backoff_ms
                .map(Duration::from_millis)
                .unwrap_or(d.max_delay),
            max_retry_after: d.max_retry_after,
        }
    }

    pub fn params(&self) -> Params {
        Params {
            temperature: self.temperature,
            top_p: self.top_p,
            max_tokens: self.resolved().max_tokens,
            seed: self.seed,
        }
    }

    /// The key variable in effect for this provider.
    pub fn key_env(&self) -> Option<String> {
        self.api_key_env
            .clone()
            .or_else(|| {
                self.provider
                    .as_deref()
                    .and_then(preset)
                    .map(|p| p.key_env.to_string())
            })
            .filter(|v| !v.is_empty())
    }

    /// Whether this provider talks HTTP (and so has an endpoint to check).
    pub fn is_http(&self) -> bool {
        matches!(
            self.provider.as_deref().and_then(preset).map(|p| p.kind),
            Some(Kind::OpenAi | Kind::Anthropic)
        )
    }

    pub(crate) fn is_anthropic(&self) -> bool {
        matches!(
            self.provider.as_deref().and_then(preset).map(|p| p.kind),
            Some(Kind::Anthropic)
        )
    }
}

impl<'de> Deserialize<'de> for ApiKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(ApiKey::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_take_the_new_names_and_per_model_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kt.toml");
        std::fs::write(
            &path,
            "[llm]\nprovider = \"deepseek\"\nmodel = \"deepseek-reasoner\"\napi_key = \"k\"\nidle_timeout_s = 90\n\
             total_timeout_s = 900\n[llm.providers.deepseek]\nmax_tokens = 4000\n\
             [llm.models.\"deepseek-reasoner\"]\ntotal_timeout_s = 3600\nmax_tokens = 16000\n\
             [llm.models.\"deepseek-chat\"]\ntotal_timeout_s = 60\n",
        )
        .unwrap();
        let c = LlmConfig::from_file(&path).unwrap();
        let t = c.timeouts();
        assert_eq!(
            (t.idle, t.total, t.first_byte),
            (
                Duration::from_secs(90),
                Duration::from_secs(3600),
                Duration::from_secs(3600)
            )
        );
        assert_eq!(c.params().max_tokens, Some(16000));
        let e = c.endpoint().unwrap();
        assert!(e.stream, "streaming is the default");
        assert_eq!(
            e.schema_style,
            SchemaStyle::JsonObject,
            "DeepSeek takes json_object"
        );
        let mut chat = c.clone();
        chat.overlay(LlmConfig {
            model: Some("deepseek-chat".into()),
            ..Default::default()
        });
        assert_eq!(chat.timeouts().total, Duration::from_secs(60));
        assert_eq!(chat.params().max_tokens, Some(4000));
    }

    #[test]
    fn api_key_is_never_serialised_or_debug_printed() {
        let c = LlmConfig {
            api_key: Some(ApiKey::new("sk-topsecret")),
            ..Default::default()
        };
        assert!(!toml::to_string(&c).unwrap().contains("sk-topsecret"));
        assert!(!format!("{c:?}").contains("sk-topsecret"));
    }
}
