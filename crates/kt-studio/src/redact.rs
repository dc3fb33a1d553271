//! Keeping secrets off the page. kt never writes API keys into a run, but a run directory is a folder of
//! files anyone may have edited: every JSON value the studio sends passes through [`redact`], which blanks
//! fields named like credentials and strings shaped like provider keys.

use serde_json::Value;

const HIDDEN: &str = "(hidden by kt studio)";

/// Field names that hold credentials (compared lower-case, `-` read as `_`).
fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace('-', "_");
    n.contains("api_key")
        || n.contains("apikey")
        || n.contains("secret")
        || n.contains("password")
        || n == "authorization"
        || n == "access_token"
        || n == "bearer"
}

/// Strings that look like a provider key (`sk-…`, `sk-ant-…`, `gsk_…`, `AIza…`) of a key's length.
fn looks_like_key(s: &str) -> bool {
    let long_token = s.len() >= 24 && !s.contains(char::is_whitespace);
    long_token
        && (s.starts_with("sk-")
            || s.starts_with("gsk_")
            || s.starts_with("AIza")
            || s.starts_with("xai-"))
}

/// Blanks secrets in `value`, in place.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_secret_name(k) && !v.is_null() {
                    *v = Value::String(HIDDEN.into());
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::String(s) if looks_like_key(s) => *s = HIDDEN.into(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_hidden_and_token_counts_are_not() {
        let mut v = json!({
            "llm": {"provider": "openai", "api_key": "abc", "headers": {"Authorization": "Bearer x"}},
            "usage": {"tokens_in": 10, "input_tokens": 5},
            "note": "sk-proj-0123456789abcdefghijklmnop",
            "list": [{"OPENAI_API_KEY": "k"}],
        });
        redact(&mut v);
        assert_eq!(v["llm"]["api_key"], HIDDEN);
        assert_eq!(v["llm"]["headers"]["Authorization"], HIDDEN);
        assert_eq!(v["llm"]["provider"], "openai");
        assert_eq!(v["usage"]["tokens_in"], 10);
        assert_eq!(v["note"], HIDDEN);
        assert_eq!(v["list"][0]["OPENAI_API_KEY"], HIDDEN);
    }
}
