//! From an [`LlmConfig`] to a ready [`LlmClient`]: the endpoint of an HTTP provider (with the key it needs),
//! the provider a name means, and the client with the configuration's defaults, retries, think tags and prices.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::client::LlmClient;
use crate::config::LlmConfig;
use crate::error::LlmError;
use crate::preset::{Kind, preset, unknown_provider};
use crate::price::PriceTable;
use crate::provider::Provider;
use crate::providers::{
    AnthropicProvider, Endpoint, ExecProvider, ManualProvider, OpenAiProvider, ReplayProvider,
    ScriptedProvider,
};
use crate::thinking::ThinkTags;
use crate::transport::ApiKey;

impl LlmConfig {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::SchemaStyle;

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
}
