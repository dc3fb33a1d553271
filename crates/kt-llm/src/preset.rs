//! What each provider name means before any setting is read: its kind (which client speaks to it), its
//! default URL, key variable and model, and how its server takes a JSON schema.

use crate::error::LlmError;
use crate::providers::SchemaStyle;

/// Defaults of a provider name.
pub(crate) struct Preset {
    pub(crate) kind: Kind,
    pub(crate) base_url: &'static str,
    pub(crate) key_env: &'static str,
    /// A cloud service where a missing key is certainly a mistake.
    pub(crate) needs_key: bool,
    pub(crate) default_model: Option<&'static str>,
    /// How the server takes a JSON schema.
    pub(crate) schema_style: SchemaStyle,
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

pub(crate) const PROVIDERS: &str = "openai, anthropic, together, deepseek, vllm, llama-server, ollama, scripted, replay, manual, exec";

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

pub(crate) fn unknown_provider(name: &str) -> LlmError {
    LlmError::Config {
        detail: format!("unknown LLM provider `{name}`"),
        fix: format!("use one of {PROVIDERS}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_provider_has_a_preset_and_others_have_none() {
        for name in PROVIDERS.split(", ") {
            assert!(preset(name).is_some(), "{name}");
        }
        assert!(preset("gpt").is_none());
        assert!(unknown_provider("gpt").to_string().contains("gpt"));
    }
}
