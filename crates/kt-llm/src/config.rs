//! [`LlmConfig`]: which LLM to use and how, from `kt.toml` / `$KT_CONFIG` / `~/.config/kt/config.toml`
//! (`[llm]` section), the environment (`KT_LLM=openai:gpt-4.1`) and command-line flags, in increasing
//! priority; and [`LlmConfig::build_client`], which turns it into a ready [`LlmClient`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::client::LlmClient;
use crate::error::LlmError;
use crate::price::PriceTable;
use crate::provider::Provider;
use crate::providers::{
    AnthropicProvider, Endpoint, ExecProvider, ManualProvider, OpenAiProvider, ReplayProvider,
    SchemaStyle, ScriptedProvider,
};
use crate::request::Params;
use crate::retry::RetryPolicy;
use crate::structured::StructuredMode;
use crate::thinking::ThinkTags;
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

/// Defaults of a provider name.
pub(crate) struct Preset {
    pub(crate) kind: Kind,
    base_url: &'static str,
    key_env: &'static str,
    /// A cloud service where a missing key is certainly a mistake.
    needs_key: bool,
    default_model: Option<&'static str>,
    /// How the server takes a JSON schema.
    schema_style: SchemaStyle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    OpenAi,
    Anthropic,
    Scripted,
    Replay,
    Manual,
    Exec,
}

const PROVIDERS: &str = "openai, anthropic, together, deepseek, vllm, llama-server, ollama, scripted, replay, manual, exec";

/// The defaults of each provider name. Structured output, per provider: OpenAI, Together, vLLM and
/// llama-server take `response_format` with a `json_schema` natively; DeepSeek takes only `json_object`, so the
/// schema also goes into the prompt; Anthropic answers through a forced tool call; Ollama gets its `format`
/// schema. A server that rejects its parameter anyway switches the client to the schema in the prompt.
pub(crate) fn preset(name: &str) -> Option<Preset> {
    let p = |kind, base_url, key_env, needs_key, default_model| Preset {
        kind,
        base_url,
        key_env,
        needs_key,
        default_model,
        schema_style: match kind {
            Kind::Anthropic => SchemaStyle::Tool,
            _ => SchemaStyle::JsonSchema,
        },
    };
    let styled = |preset: Preset, schema_style| Preset {
        schema_style,
        ..preset
    };
    Some(match name {
        "openai" => p(
            Kind::OpenAi,
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
            true,
            None,
        ),
        "anthropic" => p(
            Kind::Anthropic,
            "https://api.anthropic.com/v1",
            "ANTHROPIC_API_KEY",
            true,
            None,
        ),
        "together" => p(
            Kind::OpenAi,
            "https://api.together.xyz/v1",
            "TOGETHER_API_KEY",
            true,
            None,
        ),
        "deepseek" => styled(
            p(
                Kind::OpenAi,
                "https://api.deepseek.com/v1",
                "DEEPSEEK_API_KEY",
                true,
                Some("deepseek-chat"),
            ),
            SchemaStyle::JsonObject,
        ),
        "vllm" => p(
            Kind::OpenAi,
            "http://127.0.0.1:8000/v1",
            "VLLM_API_KEY",
            false,
            None,
        ),
        // llama-server serves whatever model it loaded and ignores the name; "local" is priced at zero.
        "llama-server" | "llamacpp" | "llama.cpp" => p(
            Kind::OpenAi,
            "http://127.0.0.1:8080/v1",
            "LLAMA_API_KEY",
            false,
            Some("local"),
        ),
        "ollama" => styled(
            p(
                Kind::OpenAi,
                "http://127.0.0.1:11434/v1",
                "OLLAMA_API_KEY",
                false,
                None,
            ),
            SchemaStyle::OllamaFormat,
        ),
        "scripted" => p(Kind::Scripted, "", "", false, Some("scripted")),
        "replay" => p(Kind::Replay, "", "", false, None),
        "manual" => p(Kind::Manual, "", "", false, Some("human")),
        "exec" => p(Kind::Exec, "", "", false, None),
        _ => return None,
    })
}

impl LlmConfig {
    /// Whether a provider is chosen at all.
    pub fn is_configured(&self) -> bool {
        self.provider.is_some()
    }

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
        if let Some(url) = crate::run_spec::base_url_from_env() {
            cfg.base_url = Some(url);
        }
        Ok((cfg, file))
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

    fn model_or_default(&self) -> Option<&str> {
        self.model.as_deref().or_else(|| {
            self.provider
                .as_deref()
                .and_then(preset)
                .and_then(|p| p.default_model)
        })
    }

    fn base_url_or_default(&self) -> String {
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

    /// The server endpoint for the HTTP providers.
    pub fn endpoint(&self) -> Result<Endpoint, LlmError> {
        let name = self.provider.as_deref().unwrap_or_default();
        let preset = preset(name).ok_or_else(|| unknown_provider(name))?;
        let model = self.model_or_default().ok_or_else(|| LlmError::Config {
            detail: format!("no model set for provider `{name}`"),
            fix: format!("set `model = \"...\"` in the [llm] section, pass --model, or use --llm {name}:MODEL"),
        })?;
        let key_env = self.key_env().unwrap_or_default();
        let api_key = self.api_key.clone().or_else(|| ApiKey::from_env(&key_env));
        // A cloud service on its own URL without a key can only fail with 401: say so before sending.
        if api_key.is_none() && preset.needs_key && self.base_url.is_none() {
            return Err(LlmError::Config {
                detail: format!("no API key for `{name}`: ${key_env} is not set"),
                fix: format!("export {key_env}=... (or set `api_key_env` in the [llm] section)"),
            });
        }
        let resolved = self.resolved();
        Ok(Endpoint {
            base_url: self.base_url_or_default(),
            model: model.to_string(),
            api_key,
            key_env,
            extra_headers: self.headers.clone(),
            timeouts: self.timeouts(),
            stream: resolved.stream.unwrap_or(true),
            schema_style: resolved.schema_style.unwrap_or(preset.schema_style),
        })
    }

    fn required_path(&self, what: &str) -> Result<&Path, LlmError> {
        let name = self.provider.as_deref().unwrap_or_default();
        self.path.as_deref().ok_or_else(|| LlmError::Config {
            detail: format!("provider `{name}` needs {what}"),
            fix: format!("use --llm {name}:PATH or set `path = \"...\"` in the [llm] section"),
        })
    }

    /// The provider this configuration names.
    pub fn build_provider(&self) -> Result<Arc<dyn Provider>, LlmError> {
        let name = self.provider.as_deref().ok_or_else(|| LlmError::Config {
            detail: "no LLM provider configured".into(),
            fix: "add `[llm] provider = \"openai\"` and `model = \"...\"` to kt.toml (or ~/.config/kt/config.toml), \
                  set KT_LLM=openai:MODEL, or pass --llm PROVIDER:MODEL"
                .into(),
        })?;
        let kind = preset(name).ok_or_else(|| unknown_provider(name))?.kind;
        Ok(match kind {
            Kind::OpenAi => Arc::new(OpenAiProvider::new(self.endpoint()?)?),
            Kind::Anthropic => Arc::new(AnthropicProvider::new(self.endpoint()?)?),
            Kind::Scripted => Arc::new(ScriptedProvider::load(
                self.required_path("an answer script (TOML or JSON)")?,
            )?),
            Kind::Replay => Arc::new(ReplayProvider::open(
                self.required_path("a cassette (a run's llm.jsonl)")?,
            )?),
            Kind::Manual => Arc::new(ManualProvider::new(
                self.path
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("prompts")),
            )),
            Kind::Exec => Arc::new(ExecProvider::new(
                self.command
                    .clone()
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| LlmError::Config {
                        detail: "provider `exec` needs a command".into(),
                        fix:
                            "use --llm exec:COMMAND or set `command = \"...\"` in the [llm] section"
                                .into(),
                    })?,
                self.timeouts().total,
            )),
        })
    }

    /// A client with this configuration's provider, defaults, retries, think tags and prices (no recorder:
    /// attach one with [`LlmClient::with_recorder`]).
    pub fn build_client(&self) -> Result<LlmClient, LlmError> {
        let mut prices = PriceTable::builtin();
        if let Some(p) = &self.prices {
            prices.extend(PriceTable::load(p)?);
        }
        let mut client = LlmClient::from_arc(self.build_provider()?)
            .with_defaults(self.params())
            .with_retry(self.retry_policy())
            .with_prices(prices);
        if let Some(tags) = &self.think_tags {
            client = client.with_think_tags(ThinkTags {
                pairs: tags.clone(),
            });
        }
        if let Some(n) = self.parse_retries {
            client = client.with_parse_retries(n);
        }
        if let Some(cap) = self.resolved().max_tokens_cap {
            client = client.with_max_tokens_cap(cap);
        }
        Ok(client)
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

fn unknown_provider(name: &str) -> LlmError {
    LlmError::Config {
        detail: format!("unknown LLM provider `{name}`"),
        fix: format!("use one of {PROVIDERS}"),
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
    fn schema_style_defaults_per_provider() {
        let style = |spec: &str| {
            let mut c = LlmConfig::parse_spec(spec).unwrap();
            c.api_key = Some(ApiKey::new("k"));
            c.endpoint().unwrap().schema_style
        };
        assert_eq!(style("openai:gpt-4.1"), SchemaStyle::JsonSchema);
        assert_eq!(style("vllm:qwen"), SchemaStyle::JsonSchema);
        assert_eq!(style("llama-server:local"), SchemaStyle::JsonSchema);
        assert_eq!(style("anthropic:claude-sonnet-4"), SchemaStyle::Tool);
        assert_eq!(style("ollama:qwen3:8b"), SchemaStyle::OllamaFormat);
        assert_eq!(style("deepseek:deepseek-chat"), SchemaStyle::JsonObject);
    }

    #[test]
    fn exec_spec_keeps_the_whole_command() {
        let c = LlmConfig::parse_spec("exec:python3 ask.py --model X:Y").unwrap();
        assert_eq!(c.command.as_deref(), Some("python3 ask.py --model X:Y"));
        assert!(c.build_provider().is_ok());
        assert!(
            LlmConfig::parse_spec("exec")
                .unwrap()
                .build_provider()
                .is_err()
        );
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
    fn cloud_provider_without_key_is_a_config_error_naming_the_variable() {
        let c = LlmConfig {
            provider: Some("together".into()),
            model: Some("m".into()),
            api_key_env: Some("KT_TEST_SURELY_UNSET_KEY".into()),
            ..Default::default()
        };
        let err = c.build_provider().unwrap_err();
        assert!(
            err.to_string().contains("KT_TEST_SURELY_UNSET_KEY"),
            "{err}"
        );
        let local = LlmConfig {
            provider: Some("llama-server".into()),
            ..Default::default()
        };
        assert!(local.build_provider().is_ok());
        assert!(
            LlmConfig::default()
                .build_provider()
                .unwrap_err()
                .to_string()
                .contains("kt.toml")
        );
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
