//! Structured-output fallback: a server that rejects the schema parameter (`response_format` with
//! `json_schema` on some OpenAI-compatible servers, a tool schema on others) answers HTTP 400 or 422 naming it.
//! The client then writes the schema into the prompt instead (`instruction` mode) for the rest of its life,
//! which every chat server accepts, and says so once.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::LlmError;

/// Words of a 400/422 body that point at the structured-output parameter.
const SCHEMA_WORDS: [&str; 4] = ["response_format", "json_schema", "json_object", "schema"];

/// Whether the client has switched to instruction mode. Shared by a client's clones.
#[derive(Debug, Default)]
pub(crate) struct SchemaFallback {
    engaged: AtomicBool,
}

impl SchemaFallback {
    pub fn engaged(&self) -> bool {
        self.engaged.load(Ordering::Relaxed)
    }

    /// Switches to instruction mode; true only for the call that switched it (which tells the user).
    pub fn engage(&self) -> bool {
        !self.engaged.swap(true, Ordering::Relaxed)
    }
}

/// Whether `err` is a server refusing the structured-output parameter.
pub(crate) fn is_schema_rejection(err: &LlmError) -> bool {
    match err {
        LlmError::BadRequest {
            status: 400 | 422,
            body,
            ..
        } => {
            let body = body.to_ascii_lowercase();
            SCHEMA_WORDS.iter().any(|w| body.contains(w))
        }
        _ => false,
    }
}

/// What the user reads, once, when the switch happens.
pub(crate) fn switch_message(provider: &str, model: &str, err: &LlmError) -> String {
    let status = match err {
        LlmError::BadRequest { status, .. } => *status,
        _ => 0,
    };
    format!(
        "{provider} ({model}) rejected structured output (HTTP {status} about response_format / the JSON schema); \
         kt now writes the schema into the prompt instead, for the rest of this run. To skip the failed first \
         try, set `structured_mode = \"instruction\"` in the [llm] section of kt.toml"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(status: u16, body: &str) -> LlmError {
        LlmError::BadRequest {
            provider: "openai".into(),
            status,
            body: body.into(),
            hint: String::new(),
        }
    }

    #[test]
    fn only_a_400_or_422_about_the_schema_counts() {
        assert!(is_schema_rejection(&bad(
            400,
            r#"{"error":{"message":"Unknown parameter: 'response_format.json_schema'"}}"#
        )));
        assert!(is_schema_rejection(&bad(422, "invalid JSON Schema")));
        assert!(!is_schema_rejection(&bad(400, "model not found")));
        assert!(!is_schema_rejection(&bad(404, "response_format")));
    }

    #[test]
    fn the_switch_is_announced_once() {
        let f = SchemaFallback::default();
        assert!(!f.engaged());
        assert!(f.engage());
        assert!(!f.engage());
        assert!(f.engaged());
    }
}
