//! Anthropic Messages API (`POST {base}/messages`, `x-api-key`, `anthropic-version`). System messages go into
//! the top-level `system` field; structured output is a forced tool call whose input is the answer (unless the
//! schema style is `instruction`). Streamed when the endpoint says so (see [`super::anthropic_stream`]).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::anthropic_stream::MessageStream;
use super::{Endpoint, SchemaStyle, StreamSwitch, json_instruction};
use crate::error::{LlmError, excerpt};
use crate::provider::{Call, Provider};
use crate::request::Role;
use crate::response::ProviderReply;
use crate::transport::{Streamed, Transport};
use crate::usage::Usage;

/// The API version kt is written against.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Messages API requires `max_tokens`; this is used when neither the request nor the config sets one.
const DEFAULT_MAX_TOKENS: u32 = 8192;

#[derive(Debug)]
pub struct AnthropicProvider {
    endpoint: Endpoint,
    transport: Transport,
    /// Off for good once the server answered a streamed request in one body.
    streaming: StreamSwitch,
}

impl AnthropicProvider {
    pub fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        let transport = Transport::new(
            "anthropic",
            endpoint.timeouts,
            &endpoint.key_env,
            endpoint.api_key.clone(),
            &endpoint.extra_headers,
        )?;
        Ok(Self {
            streaming: StreamSwitch::new(endpoint.stream),
            endpoint,
            transport,
        })
    }

    fn auth(&self) -> Vec<(&'static str, String)> {
        let mut h = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        if let Some(k) = &self.endpoint.api_key {
            h.push(("x-api-key", k.expose().to_string()));
        }
        h
    }

    /// `GET {base}/models`, for `kt doctor`.
    pub async fn check(&self, limit: std::time::Duration) -> Result<u16, LlmError> {
        self.transport
            .get_status(&self.endpoint.url("models"), &self.auth(), limit)
            .await
    }

    fn body(&self, call: &Call<'_>) -> Value {
        let req = call.request;
        let mut system: Vec<String> = req
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.clone())
            .collect();
        let messages: Vec<Value> = req
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| json!({"role": m.role, "content": [{"type": "text", "text": m.content}]}))
            .collect();
        let p = &req.params;
        let mut body = json!({
            "model": req.model.as_deref().unwrap_or(&self.endpoint.model),
            "max_tokens": p.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
        });
        if let Some(t) = p.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(t) = p.top_p {
            body["top_p"] = json!(t);
        }
        if let Some(schema) = req
            .schema
            .as_ref()
            .filter(|_| self.endpoint.schema_style != SchemaStyle::Instruction)
        {
            // Tool inputs must be JSON objects; any other root type is asked for in words instead.
            if schema.schema["type"] == "object" {
                body["tools"] = json!([{
                    "name": schema.name,
                    "description": "Give your final answer by calling this tool with it as the input.",
                    "input_schema": schema.schema,
                }]);
                body["tool_choice"] = json!({"type": "tool", "name": schema.name});
            } else {
                system.push(json_instruction(schema));
            }
        }
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if self.streaming.on() {
            body["stream"] = json!(true);
        }
        body
    }
}

fn parse_message(v: &Value) -> Result<ProviderReply, LlmError> {
    let blocks = v["content"]
        .as_array()
        .ok_or_else(|| LlmError::BadResponse {
            provider: "anthropic".into(),
            detail: "no `content` blocks in the answer".into(),
            body: excerpt(&v.to_string()),
        })?;
    let mut text = String::new();
    let mut thought = Vec::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("thinking") => {
                thought.push(block["thinking"].as_str().unwrap_or_default().to_string())
            }
            // The forced tool call carries the structured answer; it replaces any preamble text.
            Some("tool_use") => text = block["input"].to_string(),
            _ => {}
        }
    }
    let usage = match (
        v["usage"]["input_tokens"].as_u64(),
        v["usage"]["output_tokens"].as_u64(),
    ) {
        (Some(i), Some(o)) => Some(Usage {
            input_tokens: i,
            output_tokens: o,
            estimated: false,
        }),
        _ => None,
    };
    Ok(ProviderReply {
        text,
        thought: (!thought.is_empty()).then(|| thought.join("\n\n")),
        usage,
        model: v["model"].as_str().map(str::to_string),
        finish_reason: v["stop_reason"].as_str().map(str::to_string),
    })
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }
    fn model(&self) -> &str {
        &self.endpoint.model
    }
    fn native_schema(&self) -> bool {
        self.endpoint.schema_style != SchemaStyle::Instruction
    }
    fn default_max_tokens(&self) -> Option<u32> {
        Some(DEFAULT_MAX_TOKENS)
    }

    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError> {
        let url = self.endpoint.url("messages");
        let body = self.body(&call);
        if self.streaming.on() {
            let mut stream = MessageStream::default();
            let streamed = self
                .transport
                .post_sse(&url, &self.auth(), &body, |data| stream.feed(data))
                .await?;
            if let Streamed::Whole(v) = streamed {
                self.streaming.turn_off("anthropic");
                return parse_message(&v);
            }
            return stream.finish(&url);
        }
        let v = self.transport.post_json(&url, &self.auth(), &body).await?;
        parse_message(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{LlmRequest, OutputSchema};

    #[test]
    fn system_goes_top_level_and_schema_becomes_a_forced_tool() {
        let p = AnthropicProvider::new(Endpoint::new("http://x/v1", "claude")).unwrap();
        let schema = OutputSchema {
            name: "Plan".into(),
            schema: json!({"type": "object"}),
        };
        let req = LlmRequest::new("n")
            .system("be brief")
            .user("hi")
            .schema(schema);
        let body = p.body(&Call {
            request: &req,
            hash: "h",
            attempt: 1,
        });
        assert_eq!(body["system"], "be brief");
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
        assert_eq!(body["tool_choice"]["name"], "Plan");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    }

    #[test]
    fn tool_input_thinking_and_usage_are_read() {
        let v = json!({"content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"},
                       {"type": "tool_use", "name": "Plan", "input": {"a": 1}}],
                       "usage": {"input_tokens": 5, "output_tokens": 2}, "stop_reason": "tool_use"});
        let r = parse_message(&v).unwrap();
        assert_eq!(r.text, r#"{"a":1}"#);
        assert_eq!(r.thought.as_deref(), Some("hmm"));
        assert_eq!(r.usage.unwrap().output_tokens, 2);
    }
}
