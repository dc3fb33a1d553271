//! Lenient intake of JSON answers, before strict serde. Real models wrap their JSON in prose and fences, think
//! aloud first, leave trailing commas and comments, put raw newlines into a `code` string, write `"16"` for
//! 16 and `{"step": "…"}` for a plain string. Intake takes the answer as it comes:
//!
//! 1. thinking (`<think>…</think>`, also unterminated) is dropped;
//! 2. the value is located ([`json_block`]): a ```json fence first, else the longest complete value in the
//!    text; values are found by balanced-bracket scanning, so fences inside strings do not cut them;
//! 3. the syntax is relaxed where needed: raw control characters in strings are escaped, then JSON5
//!    (comments, trailing commas, single quotes) is read with the `json5` crate;
//! 4. guided by the JSON schema, values are coerced where the meaning is plain (`"16"` → 16, an object where a
//!    string is wanted → its `step` / `description` / `text` / `name`);
//! 5. strict serde has the last word.
//!
//! Every relaxation and coercion is listed in [`Lenient::repairs`]; the client writes them into `llm.jsonl`.

mod coerce;
mod locate;
mod scan;
mod syntax;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::thinking::ThinkTags;

/// A value read from an answer, with what had to be repaired to read it (empty for clean JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Lenient<T> {
    pub value: T,
    /// One sentence per repair, e.g. `ignored trailing commas (2)` or `$.parameters[0].values[1]: "16" read as
    /// 16`.
    pub repairs: Vec<String>,
}

/// Why an answer gave no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntakeError {
    #[error("the answer holds no JSON value{}", if *unclosed {
        " (a `{` or `[` opens and never closes: the answer was probably cut off)"
    } else {
        ""
    })]
    NoJson { unclosed: bool },
    #[error("the JSON in the answer does not parse: {0}")]
    Syntax(String),
    #[error("{0}")]
    Shape(String),
    #[error(
        "the answer nests brackets {depth} levels deep, more than the {limit} kt reads; answer with a flat JSON \
         value as the schema asks"
    )]
    TooDeep { depth: usize, limit: usize },
}

/// The deepest nesting of brackets an answer may have. serde_json refuses deeper values anyway (its own limit is
/// 128), and the JSON5 reader used for relaxed syntax recurses: deeper input would overflow the stack.
pub const MAX_JSON_DEPTH: usize = 128;

/// Reads a `T` out of a model's answer. `schema` (the JSON schema of `T`, e.g. from
/// [`crate::OutputSchema::of`]) guides the location (a value of the schema's top-level type) and the coercions;
/// without it only the syntax is relaxed.
pub fn parse_lenient<T: DeserializeOwned>(
    answer: &str,
    schema: Option<&Value>,
) -> Result<Lenient<T>, IntakeError> {
    let Lenient { value, repairs } = lenient_value(answer, schema)?;
    serde_json::from_value::<T>(value)
        .map(|value| Lenient { value, repairs })
        .map_err(|e| IntakeError::Shape(e.to_string()))
}

/// Like [`parse_lenient`] for any JSON value: located, relaxed and coerced, not checked against the schema.
pub fn lenient_value(answer: &str, schema: Option<&Value>) -> Result<Lenient<Value>, IntakeError> {
    let text = ThinkTags::default().strip(answer).answer;
    let depth = scan::max_nesting(&text);
    if depth > MAX_JSON_DEPTH {
        return Err(IntakeError::TooDeep {
            depth,
            limit: MAX_JSON_DEPTH,
        });
    }
    let root = schema.and_then(|s| s.get("type")).and_then(Value::as_str);
    let found = locate::locate(&text, root).map_err(|e| match e {
        locate::NotFound::Nothing { unclosed } => IntakeError::NoJson { unclosed },
        locate::NotFound::Unparsable(message) => IntakeError::Syntax(message),
    })?;
    let (mut value, mut repairs) = (found.value, found.repairs);
    if let Some(schema) = schema {
        coerce::coerce(&mut value, schema, &mut repairs);
    }
    Ok(Lenient { value, repairs })
}

/// The text of the JSON value in an answer (see the module documentation for which one), with thinking
/// dropped first; `None` when there is none.
pub fn json_block(answer: &str) -> Option<String> {
    let text = ThinkTags::default().strip(answer).answer;
    if scan::max_nesting(&text) > MAX_JSON_DEPTH {
        return None;
    }
    locate::locate(&text, None)
        .ok()
        .map(|l| text[l.start..l.end].to_string())
}

/// The span of the JSON value in `text` (no thinking removal), for [`crate::json_candidate`].
pub(crate) fn json_span(text: &str) -> Option<(usize, usize)> {
    if scan::max_nesting(text) > MAX_JSON_DEPTH {
        return None;
    }
    locate::locate(text, None).ok().map(|l| (l.start, l.end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
    struct Param {
        name: String,
        values: Vec<i64>,
    }

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
    struct Rewrite {
        code: String,
        parameters: Vec<Param>,
    }

    fn schema() -> Value {
        crate::OutputSchema::of::<Rewrite>().schema
    }

    #[test]
    fn messy_answer_parses_with_every_repair_listed() {
        let answer = "<think>Tiling helps.</think>\nHere you go:\n```json\n{\n  \"code\": \"__global__ void k() {\n\tint i = 0;\n}\",\n  \"parameters\": [{\"name\": \"TILE\", \"values\": [\"16\", 32,]},],\n}\n```\nGood luck.";
        let got = parse_lenient::<Rewrite>(answer, Some(&schema())).unwrap();
        assert_eq!(got.value.code, "__global__ void k() {\n\tint i = 0;\n}");
        assert_eq!(got.value.parameters[0].values, vec![16, 32]);
        assert_eq!(got.repairs.len(), 3, "{:?}", got.repairs);
    }

    #[test]
    fn clean_json_has_no_repairs() {
        let got =
            parse_lenient::<Rewrite>("{\"code\": \"x\", \"parameters\": []}", Some(&schema()))
                .unwrap();
        assert!(got.repairs.is_empty());
    }

    #[test]
    fn errors_say_what_was_wrong() {
        let e = parse_lenient::<Rewrite>("No JSON here, sorry.", Some(&schema())).unwrap_err();
        assert_eq!(e, IntakeError::NoJson { unclosed: false });
        let e = parse_lenient::<Rewrite>("{\"code\": \"x\"}", Some(&schema())).unwrap_err();
        assert!(e.to_string().contains("missing field `parameters`"), "{e}");
        let e = parse_lenient::<Rewrite>("<think>I will write {\"code\": ", None).unwrap_err();
        assert_eq!(e, IntakeError::NoJson { unclosed: false });
    }

    #[test]
    fn json_block_drops_unterminated_thinking_and_prefers_the_json_fence() {
        assert_eq!(json_block("<think>maybe {\"a\": 0}"), None);
        assert_eq!(
            json_block("```cuda\nint x[2] = {1, 2};\n```\n```json\n[1, 2]\n```").as_deref(),
            Some("[1, 2]")
        );
    }

    #[test]
    fn twenty_thousand_nested_brackets_are_refused_without_recursing() {
        for answer in [
            format!("{}1{}", "[".repeat(20_000), "]".repeat(20_000)),
            "{\"a\": ".repeat(20_000),
            format!("```json\n{}\n```", "[".repeat(50_000)),
        ] {
            let result = std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    (
                        lenient_value(&answer, None).map(|_| ()),
                        json_block(&answer),
                    )
                })
                .unwrap()
                .join()
                .unwrap();
            assert!(
                matches!(result.0, Err(IntakeError::TooDeep { limit: 128, .. })),
                "{:?}",
                result.0
            );
            assert_eq!(result.1, None);
        }
        // Brackets inside strings do not count.
        let fine = format!("{{\"code\": \"{}\"}}", "[".repeat(20_000));
        assert!(lenient_value(&fine, None).is_ok());
    }
}
