//! Finding the JSON value in an answer. A ```json fence wins over everything else (the last one that parses,
//! as the final answer comes last); otherwise the longest complete value anywhere in the text that parses.
//! Values are delimited by scanning balanced brackets with strings understood, never by looking for the
//! closing fence, so a `code` string holding ``` fences is taken whole; and a bracketed span of prose
//! (`a[i]`, `{see below}`) is never a value because it does not parse.

use serde_json::Value;

use super::scan::balanced_end;
use super::syntax::parse_value;

/// Fence languages that announce JSON.
const JSON_LANGS: [&str; 3] = ["json", "json5", "jsonc"];

/// A located value: its byte span in the text, and the value with the syntax repairs it needed.
pub(crate) struct Located {
    pub start: usize,
    pub end: usize,
    pub value: Value,
    pub repairs: Vec<String>,
}

/// Why no value was found.
pub(crate) enum NotFound {
    /// Nothing that even looks like a value; `unclosed` when a bracket opens and never closes.
    Nothing { unclosed: bool },
    /// A complete bracketed span that does not parse: the parser's message for the longest one.
    Unparsable(String),
}

/// The JSON value of `text`. `root` is the JSON type the schema wants at the top (`object`, `array`), if known:
/// values of another type are passed over.
pub(crate) fn locate(text: &str, root: Option<&str>) -> Result<Located, NotFound> {
    if let Some(found) = json_fences(text)
        .into_iter()
        .rev()
        .find_map(|start| value_at(text, start, root).ok())
    {
        return Ok(found);
    }
    let bytes = text.as_bytes();
    let mut best: Option<Located> = None;
    let mut failure: Option<(usize, String)> = None;
    let mut unclosed = false;
    let mut i = 0;
    while i < bytes.len() {
        if !matches!(bytes[i], b'{' | b'[') {
            i += 1;
            continue;
        }
        match balanced_end(text, i) {
            None => {
                unclosed = true;
                i += 1;
            }
            Some(end) => {
                let len = end - i;
                match parse_value(&text[i..end]) {
                    Ok((value, repairs))
                        if root.is_none_or(|t| type_name(&value) == t)
                            && best.as_ref().is_none_or(|b| len > b.end - b.start) =>
                    {
                        best = Some(Located {
                            start: i,
                            end,
                            value,
                            repairs,
                        });
                    }
                    Err(e)
                        if looks_like_json(&text[i..end])
                            && failure.as_ref().is_none_or(|(l, _)| len > *l) =>
                    {
                        failure = Some((len, e));
                    }
                    _ => {}
                }
                // Whatever is inside a complete span (a kernel's braces, a value's members) is not a candidate.
                i = end;
            }
        }
    }
    best.ok_or(match failure {
        Some((_, message)) => NotFound::Unparsable(message),
        None => NotFound::Nothing { unclosed },
    })
}

/// The value opening at the first bracket after `from`.
fn value_at(text: &str, from: usize, root: Option<&str>) -> Result<Located, NotFound> {
    let rest = &text[from..];
    let start = from + (rest.len() - rest.trim_start().len());
    if !text[start..].starts_with(['{', '[']) {
        return Err(NotFound::Nothing { unclosed: false });
    }
    let end = balanced_end(text, start).ok_or(NotFound::Nothing { unclosed: true })?;
    let (value, repairs) = parse_value(&text[start..end]).map_err(NotFound::Unparsable)?;
    if root.is_some_and(|t| type_name(&value) != t) {
        return Err(NotFound::Nothing { unclosed: false });
    }
    Ok(Located {
        start,
        end,
        value,
        repairs,
    })
}

/// Whether a bracketed span that failed to parse was meant as JSON (its first member is a string, a value or
/// a bracket), as opposed to prose or code in brackets (`{each thread}`, a kernel's body): only the former is
/// worth reporting as a broken value.
fn looks_like_json(span: &str) -> bool {
    span[1..]
        .trim_start()
        .starts_with(|c: char| "\"'{[]}-".contains(c) || c.is_ascii_digit())
}

/// Byte offsets where the bodies of ```json fences begin (just after the opening line).
fn json_fences(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let marks = t.chars().take_while(|&c| c == '`' || c == '~').count();
        if marks >= 3 {
            let lang = t[marks..].split_whitespace().next().unwrap_or("");
            if JSON_LANGS.iter().any(|l| lang.eq_ignore_ascii_case(l)) {
                starts.push(offset + line.len());
            }
        }
        offset += line.len();
    }
    starts
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str, root: Option<&str>) -> String {
        match locate(text, root) {
            Ok(l) => text[l.start..l.end].to_string(),
            Err(NotFound::Nothing { unclosed }) => format!("nothing (unclosed: {unclosed})"),
            Err(NotFound::Unparsable(e)) => format!("unparsable: {e}"),
        }
    }

    #[test]
    fn json_fence_wins_over_an_earlier_code_fence() {
        let text = "Original:\n```cuda\n__global__ void k(float* a) { a[0] = 1; }\n```\nAnswer:\n```json\n{\"a\": 1}\n```\n";
        assert_eq!(found(text, Some("object")), "{\"a\": 1}");
    }

    #[test]
    fn fences_inside_the_code_string_do_not_cut_the_value() {
        let text = "```json\n{\"code\": \"```cuda\\n__global__ void k() {}\\n```\", \"n\": 1}\n```";
        assert!(
            found(text, None).ends_with("\"n\": 1}"),
            "{}",
            found(text, None)
        );
    }

    #[test]
    fn brackets_in_prose_are_not_json() {
        let text = "We index a[i] and keep {the sum} in a register. {\"valid\": true, \"reason\": \"ok\"} Done [1].";
        assert_eq!(
            found(text, Some("object")),
            "{\"valid\": true, \"reason\": \"ok\"}"
        );
        assert_eq!(
            found("Use a[i] for {each thread}.", None),
            "nothing (unclosed: false)"
        );
    }

    #[test]
    fn cut_off_value_and_broken_value_are_told_apart() {
        assert_eq!(
            found("{\"code\": \"__global__", None),
            "nothing (unclosed: true)"
        );
        assert!(found("{\"a\": 1 \"b\": 2}", None).starts_with("unparsable"));
    }

    #[test]
    fn last_json_fence_is_the_answer() {
        let text = "```json\n{\"v\": 1}\n```\nOn reflection:\n```json\n{\"v\": 2}\n```";
        assert_eq!(found(text, None), "{\"v\": 2}");
    }
}
