//! How a JSON schema reaches the server. Each provider preset has a default that its server is known to take;
//! `[llm] schema_style` overrides it, and a server that still rejects it makes the client fall back to the
//! schema in the prompt (see the crate's `fallback` module).
//!
//! | provider                                 | default        | what is sent                                       |
//! |------------------------------------------|----------------|----------------------------------------------------|
//! | openai, vllm, llama-server, together     | `json_schema`  | `response_format: {type: json_schema, ...}`         |
//! | deepseek                                 | `json_object`  | `response_format: {type: json_object}` + schema in the prompt |
//! | ollama                                   | `ollama_format`| Ollama's `format` field with the schema (+ `response_format`) |
//! | anthropic                                | `tool`         | a forced tool call whose input is the answer         |
//! | any, on request or after a rejection     | `instruction`  | the schema in the prompt only                        |

use serde::{Deserialize, Serialize};

use crate::error::LlmError;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaStyle {
    /// OpenAI's `response_format` of type `json_schema`: the server constrains the answer to the schema.
    #[default]
    JsonSchema,
    /// `response_format` of type `json_object` (any JSON), with the schema written into the prompt.
    JsonObject,
    /// Ollama's own `format` field holding the schema, with `response_format` as well for its OpenAI layer.
    OllamaFormat,
    /// Anthropic: a forced tool call whose input is the answer.
    Tool,
    /// No parameter: the schema is written into the prompt.
    Instruction,
}

impl SchemaStyle {
    /// Whether the server is constrained to the schema itself (when not, the client writes it into the prompt).
    pub fn is_native(self) -> bool {
        matches!(self, Self::JsonSchema | Self::OllamaFormat | Self::Tool)
    }
}

impl std::str::FromStr for SchemaStyle {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self, LlmError> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "json_schema" => Ok(Self::JsonSchema),
            "json_object" => Ok(Self::JsonObject),
            "ollama_format" | "format" => Ok(Self::OllamaFormat),
            "tool" => Ok(Self::Tool),
            "instruction" | "none" => Ok(Self::Instruction),
            other => Err(LlmError::Config {
                detail: format!("unknown schema style `{other}`"),
                fix: "use json_schema, json_object, ollama_format, tool or instruction".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_parse_from_config_words_and_say_if_native() {
        assert_eq!(
            "json-object".parse::<SchemaStyle>().unwrap(),
            SchemaStyle::JsonObject
        );
        assert!("ollama_format".parse::<SchemaStyle>().unwrap().is_native());
        assert!(!SchemaStyle::JsonObject.is_native());
        assert!("xml".parse::<SchemaStyle>().is_err());
    }
}
