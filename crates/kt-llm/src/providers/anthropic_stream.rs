//! Anthropic's streamed Messages answer: server-sent events `message_start` (model, input tokens),
//! `content_block_start` / `content_block_delta` (text, thinking, or the JSON input of a tool call in pieces) /
//! `content_block_stop`, `message_delta` (stop reason, output tokens), `message_stop`; `ping` and `error` in
//! between. [`MessageStream`] assembles them into one reply.

use serde_json::Value;

use crate::error::{LlmError, excerpt};
use crate::response::ProviderReply;
use crate::usage::Usage;

#[derive(Debug, Default)]
pub(crate) struct MessageStream {
    text: String,
    thought: String,
    /// The forced tool call's input, as streamed JSON text.
    tool_input: String,
    saw_tool: bool,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    model: Option<String>,
    stop_reason: Option<String>,
    done: bool,
}

fn bad(detail: String, body: &str) -> LlmError {
    LlmError::BadResponse {
        provider: "anthropic".into(),
        detail,
        body: excerpt(body),
    }
}

impl MessageStream {
    /// Takes the data of one event; `Ok(true)` once the message is complete.
    pub fn feed(&mut self, data: &str) -> Result<bool, LlmError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|e| bad(format!("a streamed event is not valid JSON ({e})"), data))?;
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => {
                let m = &event["message"];
                self.model = m["model"].as_str().map(str::to_string);
                self.input_tokens = m["usage"]["input_tokens"].as_u64();
                self.output_tokens = m["usage"]["output_tokens"].as_u64();
            }
            "content_block_start" => {
                let block = &event["content_block"];
                match block["type"].as_str() {
                    Some("tool_use") => self.saw_tool = true,
                    Some("text") => self
                        .text
                        .push_str(block["text"].as_str().unwrap_or_default()),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = &event["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => {
                        self.text.push_str(d["text"].as_str().unwrap_or_default())
                    }
                    Some("thinking_delta") => self
                        .thought
                        .push_str(d["thinking"].as_str().unwrap_or_default()),
                    Some("input_json_delta") => self
                        .tool_input
                        .push_str(d["partial_json"].as_str().unwrap_or_default()),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = event["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(n) = event["usage"]["output_tokens"].as_u64() {
                    self.output_tokens = Some(n);
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(true);
            }
            "error" => return Err(stream_error(&event["error"])),
            _ => {}
        }
        Ok(false)
    }

    /// The assembled reply. A stream that ended before `message_stop` and without a stop reason was cut:
    /// that is a dropped connection (retried), not half an answer.
    pub fn finish(self, url: &str) -> Result<ProviderReply, LlmError> {
        if !self.done && self.stop_reason.is_none() {
            return Err(LlmError::Connection {
                provider: "anthropic".into(),
                url: url.to_string(),
                detail: format!(
                    "the stream ended before the answer was complete ({} characters received)",
                    self.text.chars().count() + self.tool_input.chars().count()
                ),
            });
        }
        let usage = match (self.input_tokens, self.output_tokens) {
            (Some(i), Some(o)) => Some(Usage {
                input_tokens: i,
                output_tokens: o,
                estimated: false,
            }),
            _ => None,
        };
        // The forced tool call carries the structured answer; it replaces any preamble text.
        let text = if self.saw_tool {
            self.tool_input
        } else {
            self.text
        };
        Ok(ProviderReply {
            text,
            thought: (!self.thought.trim().is_empty()).then(|| self.thought.trim().to_string()),
            usage,
            model: self.model,
            finish_reason: self.stop_reason,
        })
    }
}

/// An `error` event: overload and rate limits are the service's state (retried), anything else a bad response.
fn stream_error(error: &Value) -> LlmError {
    let message = error["message"].as_str().unwrap_or_default().to_string();
    match error["type"].as_str() {
        Some("overloaded_error") | Some("api_error") => LlmError::Server {
            provider: "anthropic".into(),
            status: 529,
            attempts: 1,
            body: excerpt(&message),
            retry_after: None,
        },
        Some("rate_limit_error") => LlmError::RateLimited {
            provider: "anthropic".into(),
            retry_after: None,
            attempts: 1,
            body: excerpt(&message),
        },
        _ => bad(
            "the server reported an error inside the stream".into(),
            &error.to_string(),
        ),
    }
}

/// Events of a streamed Anthropic answer (for tests): thinking, then `text` in pieces, then the stop reason.
#[cfg(test)]
pub(crate) fn anthropic_events(thinking: &str, parts: &[&str], stop_reason: &str) -> Vec<String> {
    use serde_json::json;
    let mut events = vec![
        json!({"type": "message_start", "message": {"model": "claude-sonnet-4-20250514", "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": thinking}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
    ];
    for p in parts {
        events.push(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": p}}));
    }
    events.push(json!({"type": "content_block_stop", "index": 1}));
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 6}}));
    events.push(json!({"type": "message_stop"}));
    events.into_iter().map(|e| e.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn assemble(events: &[String]) -> Result<ProviderReply, LlmError> {
        let mut s = MessageStream::default();
        for e in events {
            if s.feed(e)? {
                break;
            }
        }
        s.finish("http://x/v1/messages")
    }

    #[test]
    fn text_thinking_usage_and_stop_reason_are_assembled() {
        let r = assemble(&anthropic_events("hmm", &["4", "2"], "end_turn")).unwrap();
        assert_eq!((r.text.as_str(), r.thought.as_deref()), ("42", Some("hmm")));
        assert_eq!(r.usage.unwrap().output_tokens, 6);
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn tool_input_in_pieces_is_the_answer() {
        let events: Vec<String> = [
            json!({"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "name": "S", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"value\": "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "7}"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
            json!({"type": "message_stop"}),
        ]
        .iter()
        .map(|e| e.to_string())
        .collect();
        assert_eq!(assemble(&events).unwrap().text, "{\"value\": 7}");
    }

    #[test]
    fn cut_stream_and_error_events_are_typed() {
        let mut events = anthropic_events("", &["half"], "end_turn");
        events.truncate(7);
        assert!(matches!(
            assemble(&events),
            Err(LlmError::Connection { .. })
        ));
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let err = assemble(&[overloaded.to_string()]).unwrap_err();
        assert!(err.is_retryable(), "{err}");
    }
}
