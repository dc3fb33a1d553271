//! `llm.jsonl`, as the run's readers see it: one LLM call a line — where in the run it was asked, the
//! conversation, the answer, its tokens and time, or why it failed. kt-llm's recorder writes each line with
//! more (provider, request hash, parameters, schema, repairs: what a replay needs); a reader takes these
//! fields and ignores the rest, so that showing a run needs no LLM client.

use std::io::BufRead;
use std::path::Path;

use serde::Deserialize;

use crate::error::RecordError;

/// One message of the conversation: `system`, `user` or `assistant`, and its text.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LlmMessage {
    pub role: String,
    pub content: String,
}

/// The tokens a call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct LlmTokens {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// One line of `llm.jsonl`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LlmCall {
    /// UTC, RFC 3339.
    pub time: String,
    /// The node that asked (`stage3.apply`).
    pub node: String,
    pub messages: Vec<LlmMessage>,
    /// The answer with thinking removed; absent when the call failed.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub usage: Option<LlmTokens>,
    /// How long the call took, retries included.
    pub elapsed_ms: u64,
    /// Why the call failed, when it did.
    #[serde(default)]
    pub error: Option<String>,
}

impl LlmCall {
    /// Every call in the `llm.jsonl` at `path`, in the order made. A line that is not a call is an error naming
    /// it (a reader shows no calls rather than some).
    pub fn read_all(path: &Path) -> Result<Vec<LlmCall>, RecordError> {
        let file = std::fs::File::open(path).map_err(|e| RecordError::io("opening", path, e))?;
        let mut calls = Vec::new();
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| RecordError::io("reading", path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            let call = serde_json::from_str(&line).map_err(|e| RecordError::BadFile {
                path: path.to_path_buf(),
                what: "an LLM call record",
                message: format!("line {}: {e}", i + 1),
            })?;
            calls.push(call);
        }
        Ok(calls)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn calls_read_with_what_a_reader_needs_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("llm.jsonl");
        let line = serde_json::json!({"time": "2026-11-22T03:15:00Z", "node": "stage3.plan", "provider": "scripted",
            "model": "m", "request_hash": "ab", "messages": [{"role": "user", "content": "plan?"}],
            "params": {}, "answer": "{}", "usage": {"input_tokens": 10, "output_tokens": 4, "estimated": true},
            "elapsed_ms": 12, "attempts": 1});
        std::fs::write(&path, format!("{line}\n\n")).unwrap();
        let calls = LlmCall::read_all(&path).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].messages[0].role, "user");
        assert_eq!(calls[0].usage.unwrap().output_tokens, 4);
        std::fs::write(&path, format!("{line}\nnot json\n")).unwrap();
        assert!(
            LlmCall::read_all(&path)
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
    }
}
