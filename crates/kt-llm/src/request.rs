//! What a caller asks: the conversation, sampling parameters, an optional output schema, and the `node` label
//! that names the graph node asking (used by scripted answers, the record, and per-node accounting).

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// Sampling parameters. `None` means "use the client's default, else the server's".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Params {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Params {
    /// Fills every unset field from `defaults`.
    pub fn or(&self, defaults: &Params) -> Params {
        Params {
            temperature: self.temperature.or(defaults.temperature),
            top_p: self.top_p.or(defaults.top_p),
            max_tokens: self.max_tokens.or(defaults.max_tokens),
            seed: self.seed.or(defaults.seed),
        }
    }
}

/// A JSON schema the answer must follow, with the name providers want for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    pub name: String,
    pub schema: serde_json::Value,
}

impl OutputSchema {
    /// The schema of a Rust type, as schemars generates it.
    pub fn of<T: schemars::JsonSchema>() -> Self {
        let schema = schemars::schema_for!(T);
        // Provider schema names allow only [a-zA-Z0-9_-]; generic type names contain `<`, `,` and spaces.
        let name: String = T::schema_name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Self {
            name,
            schema: schema.to_value(),
        }
    }
}

/// One call to an LLM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmRequest {
    /// The graph node asking, e.g. `stage1.describe`. Scripted answers, the record and usage totals key on it.
    pub node: String,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub params: Params,
    /// Overrides the client's model for this one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When set, providers that can constrain the output to this schema do so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<OutputSchema>,
}

impl LlmRequest {
    pub fn new(node: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            messages: Vec::new(),
            params: Params::default(),
            model: None,
            schema: None,
        }
    }
    pub fn system(mut self, content: impl Into<String>) -> Self {
        self.messages.push(Message::system(content));
        self
    }
    pub fn user(mut self, content: impl Into<String>) -> Self {
        self.messages.push(Message::user(content));
        self
    }
    pub fn assistant(mut self, content: impl Into<String>) -> Self {
        self.messages.push(Message::assistant(content));
        self
    }
    pub fn temperature(mut self, t: f64) -> Self {
        self.params.temperature = Some(t);
        self
    }
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.params.max_tokens = Some(n);
        self
    }
    pub fn seed(mut self, seed: u64) -> Self {
        self.params.seed = Some(seed);
        self
    }
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
    pub fn schema(mut self, schema: OutputSchema) -> Self {
        self.schema = Some(schema);
        self
    }

    /// A stable hash of what determines the answer: messages, model override, parameters and schema, as the
    /// caller wrote them (before client defaults are filled in, so a replay under another config still matches).
    /// The node label is not part of it: the same question asked by a renamed node is the same question.
    /// Neither are measured sections (`<measured>` … `</measured>`, see [`crate::without_measured`]): they
    /// hold what a GPU measured, so a recorded run replays on another GPU.
    pub fn stable_hash(&self) -> String {
        #[derive(Serialize)]
        struct Key<'a> {
            messages: Vec<Message>,
            model: &'a Option<String>,
            params: &'a Params,
            schema: Option<String>,
        }
        // The schema goes in as canonical text (sorted keys) so that map ordering features elsewhere in the
        // build cannot change the hash.
        let schema = self
            .schema
            .as_ref()
            .map(|s| format!("{}:{}", s.name, canonical_json(&s.schema)));
        let messages = self
            .messages
            .iter()
            .map(|m| Message {
                role: m.role,
                content: crate::measured::without_measured(&m.content).into_owned(),
            })
            .collect();
        let key = Key {
            messages,
            model: &self.model,
            params: &self.params,
            schema,
        };
        let bytes = serde_json::to_vec(&key).unwrap_or_default();
        blake3::hash(&bytes).to_hex()[..32].to_string()
    }

    /// The concatenated text of all messages, for token estimates.
    pub(crate) fn prompt_chars(&self) -> usize {
        self.messages
            .iter()
            .map(|m| m.content.chars().count())
            .sum()
    }
}

/// JSON text with object keys sorted at every level.
fn canonical_json(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        serde_json::Value::String(k.clone()),
                        canonical_json(&map[k])
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        serde_json::Value::Array(items) => {
            format!(
                "[{}]",
                items
                    .iter()
                    .map(canonical_json)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_ignores_node_label_but_not_messages_or_params() {
        let a = LlmRequest::new("a").user("hi").temperature(0.5);
        let b = LlmRequest::new("b").user("hi").temperature(0.5);
        assert_eq!(a.stable_hash(), b.stable_hash());
        assert_ne!(
            a.stable_hash(),
            LlmRequest::new("a")
                .user("hi!")
                .temperature(0.5)
                .stable_hash()
        );
        assert_ne!(
            a.stable_hash(),
            LlmRequest::new("a")
                .user("hi")
                .temperature(0.6)
                .stable_hash()
        );
        assert_ne!(a.stable_hash(), a.clone().model("m").stable_hash());
    }

    #[test]
    fn measured_sections_are_not_part_of_a_requests_identity() {
        let plain = LlmRequest::new("plan").user("Kernel:\nPlan it.\n");
        let on_h100 = LlmRequest::new("plan")
            .user("Kernel:\n<measured>\nmemory-bound at 82 %\n</measured>\nPlan it.\n");
        let on_a100 = LlmRequest::new("plan")
            .user("Kernel:\n<measured>\nlatency-bound, occupancy 30 %\n</measured>\nPlan it.\n");
        assert_eq!(plain.stable_hash(), on_h100.stable_hash());
        assert_eq!(on_h100.stable_hash(), on_a100.stable_hash());
        // Text outside the markers still counts.
        let other = LlmRequest::new("plan")
            .user("Kernel:\n<measured>\nmemory-bound at 82 %\n</measured>\nPlan it again.\n");
        assert_ne!(on_h100.stable_hash(), other.stable_hash());
    }

    #[test]
    fn hash_does_not_depend_on_schema_key_order() {
        let s1: serde_json::Value =
            serde_json::from_str(r#"{"type":"object","properties":{"a":{},"b":{}}}"#).unwrap();
        let s2: serde_json::Value =
            serde_json::from_str(r#"{"properties":{"b":{},"a":{}},"type":"object"}"#).unwrap();
        let r1 = LlmRequest::new("n").user("x").schema(OutputSchema {
            name: "S".into(),
            schema: s1,
        });
        let r2 = LlmRequest::new("n").user("x").schema(OutputSchema {
            name: "S".into(),
            schema: s2,
        });
        assert_eq!(r1.stable_hash(), r2.stable_hash());
    }

    #[test]
    fn schema_name_of_generic_type_is_provider_safe() {
        let s = OutputSchema::of::<Vec<u32>>();
        assert!(
            s.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{}",
            s.name
        );
    }
}
