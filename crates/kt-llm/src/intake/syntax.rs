//! From text to a JSON value, leniently: strict JSON first; then with raw control characters inside strings
//! escaped; then as JSON5 (comments, trailing commas, single-quoted strings, unquoted keys) through the
//! `json5` crate. What had to be relaxed is returned with the value.

use serde_json::Value;

use super::scan::normalise;

/// Parses `text` as one JSON value, relaxing strict JSON where needed. The error is strict serde_json's, which
/// names the line and column of the first problem.
pub(crate) fn parse_value(text: &str) -> Result<(Value, Vec<String>), String> {
    let strict_error = match serde_json::from_str::<Value>(text) {
        Ok(v) => return Ok((v, Vec::new())),
        Err(e) => e,
    };
    let (fixed, found) = normalise(text);
    let mut repairs = found.describe();
    if found.raw_controls > 0
        && let Ok(v) = serde_json::from_str::<Value>(&fixed)
    {
        return Ok((v, repairs));
    }
    match json5::from_str::<Value>(&fixed) {
        Ok(v) => {
            if repairs.iter().all(|r| r.starts_with("escaped")) {
                // The lexer saw nothing it names, yet strict JSON failed: some other JSON5 form (unquoted keys,
                // hexadecimal numbers, a leading `+`).
                repairs.push("read JSON5 syntax (e.g. unquoted keys)".into());
            }
            Ok((v, repairs))
        }
        Err(_) => Err(strict_error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strict_json_needs_no_repair() {
        assert_eq!(
            parse_value("{\"a\": 1}").unwrap(),
            (json!({"a": 1}), vec![])
        );
    }

    #[test]
    fn json5_forms_are_read_and_named() {
        let (v, repairs) = parse_value(
            "{\n  // the tile\n  'TILE': 16,\n  \"code\": \"a\n b\",\n  list: [1, 2,],\n}",
        )
        .unwrap();
        assert_eq!(v, json!({"TILE": 16, "code": "a\n b", "list": [1, 2]}));
        assert_eq!(repairs.len(), 4, "{repairs:?}");
        let (_, repairs) = parse_value("{a: 0x10}").unwrap();
        assert_eq!(repairs, vec!["read JSON5 syntax (e.g. unquoted keys)"]);
    }

    #[test]
    fn integers_stay_integers_through_json5() {
        let (v, _) = parse_value("{'n': 16, 'f': 1.5}").unwrap();
        assert!(v["n"].is_i64());
        assert_eq!(v["f"], 1.5);
    }

    #[test]
    fn hopeless_text_reports_the_strict_error() {
        let err = parse_value("{\"a\": }").unwrap_err();
        assert!(err.contains("line 1"), "{err}");
    }
}
