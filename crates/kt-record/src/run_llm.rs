//! `run.json`'s and `result.json`'s `llm`: which LLM a run used and how a later command reaches it again. Its own
//! file because the provenance seal covers it and run.json holds the seal: both use this, neither the other.

use serde::{Deserialize, Serialize};

/// Which LLM a run used (`provider` only, e.g. `scripted` or `none`, when there is no model), and how a later
/// command on the run (`kt resume`, `kt replay`, `kt debug node`) reaches it again. Never a key: keys stay in
/// the environment of whoever runs the command.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunLlm {
    pub provider: String,
    pub model: String,
    /// The provider in `--llm` form: `openai:gpt-4.1`, `llama-server:local`, `replay:/abs/cassette.jsonl`,
    /// `scripted:/abs/answers.toml`, `manual:/abs/dir`, `exec:COMMAND` (file paths made absolute). Absent in
    /// runs made before it was recorded and in runs without an LLM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// The server of an HTTP provider, when it is not the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// `false` when the run asked for whole (non-streamed) answers (`--no-stream`, `stream = false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

impl RunLlm {
    /// A run without an LLM (`kt testgen --info-from-sidecar --script`).
    pub fn none() -> Self {
        Self {
            provider: "none".into(),
            ..Self::default()
        }
    }
}
