//! The providers: two that talk to servers (OpenAI-compatible, Anthropic) and four that do not (scripted
//! answers, replay of a recorded run, a human answering through files, a command answering on stdout).

mod anthropic;
pub(crate) mod anthropic_stream;
mod exec;
mod manual;
mod openai;
mod prompt_text;
mod replay;
mod schema_style;
mod scripted;
mod stream_switch;

use std::collections::BTreeMap;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicProvider};
pub use exec::ExecProvider;
pub use manual::ManualProvider;
pub use openai::OpenAiProvider;
pub use replay::ReplayProvider;
pub use schema_style::SchemaStyle;
pub use scripted::ScriptedProvider;
pub(crate) use stream_switch::StreamSwitch;

use crate::transport::{ApiKey, Timeouts};

/// Where and how to reach an LLM server.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Up to and including the API version, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    /// `None` for servers that need no key (llama-server, Ollama, vLLM without `--api-key`).
    pub api_key: Option<ApiKey>,
    /// The environment variable the key came from, named in authentication errors.
    pub key_env: String,
    /// Sent with every request (e.g. `OpenAI-Organization`, a proxy's routing header).
    pub extra_headers: BTreeMap<String, String>,
    pub timeouts: Timeouts,
    /// Stream the answer as server-sent events (guards long generations with the idle deadline instead of
    /// waiting for the whole answer before the first byte).
    pub stream: bool,
    /// How a JSON schema is sent (see [`SchemaStyle`]; the config picks the default per provider).
    pub schema_style: SchemaStyle,
}

impl Endpoint {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            key_env: String::new(),
            extra_headers: BTreeMap::new(),
            timeouts: Timeouts::default(),
            stream: false,
            schema_style: SchemaStyle::JsonSchema,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }
}

/// The instruction that asks for JSON when a server cannot be constrained to a schema.
pub(crate) fn json_instruction(schema: &crate::request::OutputSchema) -> String {
    format!(
        "Answer with a single JSON value and nothing else (no prose, no code fence). It must validate against \
         this JSON schema:\n{}",
        serde_json::to_string_pretty(&schema.schema).unwrap_or_default()
    )
}
