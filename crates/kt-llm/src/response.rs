//! What a call returns.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::code::extract_code;
use crate::error::LlmError;
use crate::usage::Usage;

/// The answer of one call, with its accounting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmResponse {
    /// The answer with any thinking removed.
    pub text: String,
    /// The model's thinking (tagged passages or a separate reasoning field), kept for the record.
    pub thought: Option<String>,
    pub usage: Usage,
    /// USD; `None` when the model is not in the price table.
    pub cost_usd: Option<f64>,
    /// From sending the first attempt to the last byte of the answer, retries and waits included.
    #[serde(with = "millis")]
    pub elapsed: Duration,
    pub node: String,
    pub provider: String,
    pub model: String,
    /// How many attempts it took (1 = no retry).
    pub attempts: u32,
    pub finish_reason: Option<String>,
    /// [`crate::request::LlmRequest::stable_hash`] of the request.
    pub request_hash: String,
    /// What lenient intake repaired to read a structured answer (see [`crate::intake::parse_lenient`]); empty for
    /// free-text calls and clean JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
}

impl LlmResponse {
    /// Adds the accounting of an earlier call that this response builds on (a re-ask): tokens, cost (unknown
    /// if either is), attempts; its thought where this one has none.
    pub(crate) fn absorb(&mut self, earlier: &LlmResponse) {
        self.usage.input_tokens += earlier.usage.input_tokens;
        self.usage.output_tokens += earlier.usage.output_tokens;
        self.usage.estimated |= earlier.usage.estimated;
        self.cost_usd = match (self.cost_usd, earlier.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.attempts += earlier.attempts;
        if self.thought.is_none() {
            self.thought.clone_from(&earlier.thought);
        }
    }

    /// The code block of the answer (see [`extract_code`]), with this response's node in the error.
    pub fn code(&self) -> Result<String, LlmError> {
        extract_code(&self.text).map_err(|e| match e {
            LlmError::NoCode {
                detail, excerpt, ..
            } => LlmError::NoCode {
                node: Some(self.node.clone()),
                detail,
                excerpt,
            },
            other => other,
        })
    }
}

/// What a provider hands back for one attempt, before the client strips thinking and prices it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderReply {
    pub text: String,
    /// Thinking the server returned in a separate field (`reasoning_content`, Anthropic `thinking` blocks).
    pub thought: Option<String>,
    /// Token counts from the server, if it sent them.
    pub usage: Option<Usage>,
    /// The model the server says answered, if it said.
    pub model: Option<String>,
    pub finish_reason: Option<String>,
}

pub(crate) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}
