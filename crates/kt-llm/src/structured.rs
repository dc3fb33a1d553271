//! Answers as Rust values. The schema comes from schemars, the parse from serde; an answer that does not
//! parse is sent back with the parse error, a bounded number of times.

use std::time::Instant;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::client::{LlmClient, append_to_last_user};
use crate::error::{LlmError, excerpt};
use crate::intake::{json_span, lenient_value};
use crate::providers::json_instruction;
use crate::request::{LlmRequest, Message, OutputSchema};
use crate::response::LlmResponse;

/// How the JSON answer is obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StructuredMode {
    /// The server constrains the output to the schema (OpenAI/llama.cpp `response_format`, Anthropic forced
    /// tool call); providers that cannot get the schema in the prompt instead.
    #[default]
    Native,
    /// The schema is put in the prompt; the server is not constrained (for servers that reject
    /// `response_format`).
    Instruction,
    /// The model answers freely; a second call turns that answer into JSON. Best when constraining the first
    /// answer would hurt its quality.
    Separate,
    /// The model thinks freely, then, in the same conversation, gives the constrained answer.
    Hybrid,
}

impl std::str::FromStr for StructuredMode {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self, LlmError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "native" => Ok(Self::Native),
            "instruction" => Ok(Self::Instruction),
            "separate" => Ok(Self::Separate),
            "hybrid" => Ok(Self::Hybrid),
            other => Err(LlmError::Config {
                detail: format!("unknown structured mode `{other}`"),
                fix: "use native, instruction, separate or hybrid".into(),
            }),
        }
    }
}

const HYBRID_THINK: &str = "First think the problem through in prose. Do not give the final structured answer \
                            yet: it will be asked for next.";
const HYBRID_FINAL: &str = "Now give your final answer as JSON matching the schema.";
const SEPARATE_SYSTEM: &str =
    "You convert a given answer into JSON. Keep its content; do not add or drop facts.";

impl LlmClient {
    /// Asks for a `T`. The answer is read leniently (see [`crate::parse_lenient`]): the repairs it needed are
    /// in [`LlmResponse::repairs`] and in the record. An answer that still does not parse is asked for again
    /// with the reason, up to the client's parse retries. The returned response is the one that parsed, with
    /// `usage`, `cost_usd`, `elapsed` and `attempts` summed over every call this took.
    pub async fn structured<T: JsonSchema + DeserializeOwned>(
        &self,
        request: LlmRequest,
        mode: StructuredMode,
    ) -> Result<(T, LlmResponse), LlmError> {
        let type_name = std::any::type_name::<T>();
        self.structured_with(request, OutputSchema::of::<T>(), mode, type_name, |value| {
            serde_json::from_value::<T>(value).map_err(|e| e.to_string())
        })
        .await
    }

    /// Like [`LlmClient::structured`] for a schema known only at run time (e.g. `kt llm ask --json-schema`):
    /// the answer must be JSON (read leniently, coerced towards the schema); the schema is not validated here.
    pub async fn structured_value(
        &self,
        request: LlmRequest,
        schema: OutputSchema,
        mode: StructuredMode,
    ) -> Result<(serde_json::Value, LlmResponse), LlmError> {
        let name = schema.name.clone();
        self.structured_with(request, schema, mode, &name, Ok).await
    }

    async fn structured_with<T>(
        &self,
        request: LlmRequest,
        schema: OutputSchema,
        mode: StructuredMode,
        type_name: &str,
        parse: impl Fn(serde_json::Value) -> Result<T, String>,
    ) -> Result<(T, LlmResponse), LlmError> {
        let started = Instant::now();
        let mut spent: Vec<LlmResponse> = Vec::new();
        let mut ask = self.first_ask(request, &schema, mode, &mut spent).await?;
        let mut tries = 0;
        loop {
            tries += 1;
            let (mut response, mut record) = self.complete_deferred(ask.clone()).await?;
            let parsed = lenient_value(&response.text, Some(&schema.schema))
                .map_err(|e| e.to_string())
                .and_then(|l| parse(l.value).map(|v| (v, l.repairs)));
            match parsed {
                Ok((value, repairs)) => {
                    if !repairs.is_empty() {
                        tracing::info!(node = %response.node, ?repairs, "structured answer read leniently");
                    }
                    record.repairs.clone_from(&repairs);
                    self.write_record(record);
                    response.repairs = repairs;
                    return Ok((value, summed(response, &spent, started)));
                }
                Err(error) => {
                    record
                        .notes
                        .push(format!("the answer could not be used: {error}"));
                    self.write_record(record);
                    if tries > self.parse_retries {
                        return Err(LlmError::SchemaMismatch {
                            node: response.node,
                            type_name: type_name.to_string(),
                            attempts: tries,
                            error,
                            excerpt: excerpt(&response.text),
                        });
                    }
                    tracing::warn!(node = %response.node, try_no = tries, %error, "structured answer did not parse; asking again");
                    ask.messages.push(Message::assistant(response.text.clone()));
                    ask.messages.push(Message::user(format!(
                        "That answer could not be parsed: {error}. Reply again with only the JSON value, matching \
                         the schema."
                    )));
                    spent.push(response);
                }
            }
        }
    }

    /// The request that asks for the structured value in `mode`; a mode that asks a free question first
    /// (separate, hybrid) has spent that answer, kept in `spent` for the accounting.
    async fn first_ask(
        &self,
        request: LlmRequest,
        schema: &OutputSchema,
        mode: StructuredMode,
        spent: &mut Vec<LlmResponse>,
    ) -> Result<LlmRequest, LlmError> {
        Ok(match mode {
            StructuredMode::Native => request.schema(schema.clone()),
            StructuredMode::Instruction => {
                let mut r = request;
                r.schema = None;
                append_to_last_user(&mut r, &json_instruction(schema));
                r
            }
            StructuredMode::Separate => {
                let mut free = request.clone();
                free.schema = None;
                let first = self.complete(free).await?;
                let convert = LlmRequest {
                    node: request.node.clone(),
                    messages: vec![
                        Message::system(SEPARATE_SYSTEM),
                        Message::user(format!("Convert this answer into JSON:\n\n{}", first.text)),
                    ],
                    params: request.params.clone(),
                    model: request.model.clone(),
                    schema: Some(schema.clone()),
                };
                spent.push(first);
                convert
            }
            StructuredMode::Hybrid => {
                let mut think = request.clone();
                think.schema = None;
                append_to_last_user(&mut think, HYBRID_THINK);
                let first = self.complete(think.clone()).await?;
                let mut fin = think;
                // The thought is given back as the assistant's turn so that the constrained call builds on it.
                let said = match &first.thought {
                    Some(t) if first.text.trim().is_empty() => t.clone(),
                    _ => first.text.clone(),
                };
                fin.messages.push(Message::assistant(said));
                fin.messages.push(Message::user(HYBRID_FINAL));
                fin.schema = Some(schema.clone());
                spent.push(first);
                fin
            }
        })
    }
}

/// The JSON inside an answer: the value of a ```json fence if there is one, else the longest complete JSON
/// value in the text (found by balanced-bracket scanning, so fences inside strings do not cut it), else the
/// trimmed text (so a parse error shows what was there). See [`crate::json_block`] for the same with thinking
/// removed.
pub fn json_candidate(text: &str) -> &str {
    match json_span(text) {
        Some((start, end)) => &text[start..end],
        None => text.trim(),
    }
}

/// The response that parsed, with the accounting of the earlier ones added.
fn summed(mut last: LlmResponse, earlier: &[LlmResponse], started: Instant) -> LlmResponse {
    for r in earlier {
        last.absorb(r);
    }
    last.elapsed = started.elapsed();
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_found_inside_fences_and_prose() {
        assert_eq!(json_candidate("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(
            json_candidate("Sure! {\"a\": [1]} Hope it helps."),
            "{\"a\": [1]}"
        );
        assert_eq!(json_candidate("[1, 2]"), "[1, 2]");
        assert_eq!(json_candidate(" nothing "), "nothing");
    }

    #[test]
    fn modes_parse_from_config_words() {
        assert_eq!(
            "Hybrid".parse::<StructuredMode>().unwrap(),
            StructuredMode::Hybrid
        );
        assert!("strict".parse::<StructuredMode>().is_err());
    }
}
