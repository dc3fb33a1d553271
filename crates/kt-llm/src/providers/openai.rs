//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI, Together, DeepSeek, vLLM,
//! llama.cpp's llama-server and Ollama all speak it. Structured output follows the endpoint's
//! [`SchemaStyle`]: `response_format` with a `json_schema` (OpenAI, vLLM, llama-server), `json_object`
//! (DeepSeek, with the schema in the prompt), or Ollama's `format`. Streamed (SSE) when the endpoint says so.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Endpoint, SchemaStyle, StreamSwitch};
use crate::error::{LlmError, excerpt};
use crate::provider::{Call, Provider};
use crate::response::ProviderReply;
use crate::transport::{Streamed, Transport};
use crate::usage::Usage;

#[derive(Debug)]
pub struct OpenAiProvider {
    endpoint: Endpoint,
    transport: Transport,
    /// Off for good once the server answered a streamed request in one body (see [`StreamSwitch`]).
    streaming: StreamSwitch,
}

impl OpenAiProvider {
    pub fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        let transport = Transport::new(
            "openai",
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
        match &self.endpoint.api_key {
            Some(k) => vec![("authorization", format!("Bearer {}", k.expose()))],
            None => Vec::new(),
        }
    }

    fn body(&self, call: &Call<'_>) -> Value {
        let req = call.request;
        let messages: Vec<Value> = req
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let mut body = json!({
            "model": req.model.as_deref().unwrap_or(&self.endpoint.model),
            "messages": messages,
        });
        let p = &req.params;
        if let Some(t) = p.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(t) = p.top_p {
            body["top_p"] = json!(t);
        }
        if let Some(n) = p.max_tokens {
            body["max_tokens"] = json!(n);
        }
        if let Some(s) = p.seed {
            body["seed"] = json!(s);
        }
        if let Some(schema) = &req.schema {
            // Not strict: OpenAI's strict mode rejects ordinary schemars output (integer formats, optional
            // fields); the client parses and re-asks, which covers what strictness would.
            let json_schema = json!({
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.schema, "strict": false},
            });
            match self.endpoint.schema_style {
                SchemaStyle::JsonSchema | SchemaStyle::Tool => {
                    body["response_format"] = json_schema
                }
                SchemaStyle::JsonObject => body["response_format"] = json!({"type": "json_object"}),
                SchemaStyle::OllamaFormat => {
                    body["format"] = schema.schema.clone();
                    body["response_format"] = json_schema;
                }
                SchemaStyle::Instruction => {}
            }
        }
        if self.streaming.on() {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    /// `GET {base}/models`: the cheapest request that proves the server is up and the key accepted.
    pub async fn check(&self, limit: std::time::Duration) -> Result<u16, LlmError> {
        self.transport
            .get_status(&self.endpoint.url("models"), &self.auth(), limit)
            .await
    }

    async fn send_streaming(&self, url: &str, body: &Value) -> Result<ProviderReply, LlmError> {
        let mut reply = ProviderReply::default();
        let mut thought = String::new();
        let mut done = false;
        let streamed = self
            .transport
            .post_sse(url, &self.auth(), body, |data| {
                if data.trim() == "[DONE]" {
                    done = true;
                    return Ok(true);
                }
                let chunk: Value =
                    serde_json::from_str(data).map_err(|e| LlmError::BadResponse {
                        provider: "openai".into(),
                        detail: format!("a streamed chunk is not valid JSON ({e})"),
                        body: excerpt(data),
                    })?;
                if let Some(err) = chunk.get("error") {
                    return Err(LlmError::BadResponse {
                        provider: "openai".into(),
                        detail: "the server reported an error inside the stream".into(),
                        body: excerpt(&err.to_string()),
                    });
                }
                if let Some(choice) = chunk["choices"].get(0) {
                    if let Some(t) = choice["delta"]["content"].as_str() {
                        reply.text.push_str(t);
                    }
                    if let Some(t) = choice["delta"]["reasoning_content"].as_str() {
                        thought.push_str(t);
                    }
                    if let Some(f) = choice["finish_reason"].as_str() {
                        reply.finish_reason = Some(f.to_string());
                    }
                }
                if let Some(u) = parse_usage(&chunk["usage"]) {
                    reply.usage = Some(u);
                }
                if let Some(m) = chunk["model"].as_str() {
                    reply.model = Some(m.to_string());
                }
                Ok(false)
            })
            .await?;
        if let Streamed::Whole(v) = streamed {
            self.streaming.turn_off("openai");
            return parse_completion(&v);
        }
        // A stream cut before its end marker and without a finish reason is a truncated answer: treat it as
        // a dropped connection (retried) rather than hand half an answer to a parser.
        if !done && reply.finish_reason.is_none() {
            return Err(LlmError::Connection {
                provider: "openai".into(),
                url: url.to_string(),
                detail: format!(
                    "the stream ended before the answer was complete ({} characters received)",
                    reply.text.chars().count()
                ),
            });
        }
        reply.thought = (!thought.trim().is_empty()).then(|| thought.trim().to_string());
        Ok(reply)
    }
}

fn parse_usage(u: &Value) -> Option<Usage> {
    Some(Usage {
        input_tokens: u["prompt_tokens"].as_u64()?,
        output_tokens: u["completion_tokens"].as_u64()?,
        estimated: false,
    })
}

/// Reads a non-streamed chat completion.
fn parse_completion(v: &Value) -> Result<ProviderReply, LlmError> {
    let bad = |detail: &str| LlmError::BadResponse {
        provider: "openai".into(),
        detail: detail.into(),
        body: excerpt(&v.to_string()),
    };
    if let Some(err) = v.get("error") {
        return Err(LlmError::BadResponse {
            provider: "openai".into(),
            detail: "the server answered with an error object".into(),
            body: excerpt(&err.to_string()),
        });
    }
    let choice = v["choices"]
        .get(0)
        .ok_or_else(|| bad("no `choices` in the answer"))?;
    let message = &choice["message"];
    if !message.is_object() {
        return Err(bad("the first choice has no `message`"));
    }
    Ok(ProviderReply {
        text: message["content"].as_str().unwrap_or_default().to_string(),
        thought: message["reasoning_content"]
            .as_str()
            .filter(|t| !t.trim().is_empty())
            .map(|t| t.trim().to_string()),
        usage: parse_usage(&v["usage"]),
        model: v["model"].as_str().map(str::to_string),
        finish_reason: choice["finish_reason"].as_str().map(str::to_string),
    })
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }
    fn model(&self) -> &str {
        &self.endpoint.model
    }
    fn native_schema(&self) -> bool {
        self.endpoint.schema_style.is_native()
    }

    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError> {
        let url = self.endpoint.url("chat/completions");
        let body = self.body(&call);
        if self.streaming.on() {
            self.send_streaming(&url, &body).await
        } else {
            let v = self.transport.post_json(&url, &self.auth(), &body).await?;
            parse_completion(&v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{LlmRequest, OutputSchema};

    fn body_for(style: SchemaStyle) -> Value {
        let p = OpenAiProvider::new(Endpoint {
            schema_style: style,
            ..Endpoint::new("http://x/v1", "m")
        })
        .unwrap();
        let req = LlmRequest::new("n").user("q").schema(OutputSchema {
            name: "S".into(),
            schema: json!({"type": "object"}),
        });
        p.body(&Call {
            request: &req,
            hash: "h",
            attempt: 1,
        })
    }

    #[test]
    fn each_schema_style_sends_its_parameter() {
        assert_eq!(
            body_for(SchemaStyle::JsonSchema)["response_format"]["type"],
            "json_schema"
        );
        assert_eq!(
            body_for(SchemaStyle::JsonObject)["response_format"]["type"],
            "json_object"
        );
        let ollama = body_for(SchemaStyle::OllamaFormat);
        assert_eq!(ollama["format"]["type"], "object");
        assert!(
            body_for(SchemaStyle::Instruction)
                .get("response_format")
                .is_none()
        );
    }

    #[test]
    fn completion_with_reasoning_field_and_usage_is_read() {
        let v = json!({"model": "m", "choices": [{"message": {"content": "hi", "reasoning_content": "hmm"},
                        "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}});
        let r = parse_completion(&v).unwrap();
        assert_eq!(r.text, "hi");
        assert_eq!(r.thought.as_deref(), Some("hmm"));
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 3,
                output_tokens: 1,
                estimated: false
            })
        );
    }

    #[test]
    fn completion_without_choices_is_a_bad_response() {
        assert!(matches!(
            parse_completion(&json!({"x": 1})),
            Err(LlmError::BadResponse { .. })
        ));
        assert!(matches!(
            parse_completion(&json!({"error": {"message": "no"}})),
            Err(LlmError::BadResponse { .. })
        ));
    }
}
