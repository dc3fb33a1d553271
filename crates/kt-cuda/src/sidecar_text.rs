//! What a sidecar's text errors say: unknown keys are refused, and a TOML error is told in sidecar terms (the
//! key, its line, what is allowed), never in the words of the types that read it (`sidecar_values.rs` reads
//! the values and names what a value may be).

/// A TOML error of a sidecar in sidecar terms: `line N: …` where the text has a place (a missing key has
/// none), keys called keys, the allowed ones listed.
pub(crate) fn explain(e: &toml::de::Error, text: &str) -> String {
    let message = e
        .message()
        .trim()
        .replace("unknown field", "unknown key")
        .replace("missing field", "missing key")
        .replace("duplicate field", "duplicate key")
        .replace(", expected one of", "; a sidecar's keys are")
        .replace(", expected", "; expected");
    let missing = message.starts_with("missing key");
    match e.span() {
        Some(span) if !missing => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {message}")
        }
        _ if missing => all_missing(text).unwrap_or(message),
        _ => message,
    }
}

/// The keys every sidecar must have (the others have defaults).
const REQUIRED: &[&str] = &[
    "kernel",
    "description",
    "problem_size",
    "outputs",
    "default_block",
    "bench",
    "inputs",
    "flops",
    "bytes",
];

/// Every required key the text lacks, in one message (TOML's error names only the first, and a user
/// writing a sidecar by hand would otherwise meet them one run at a time).
fn all_missing(text: &str) -> Option<String> {
    let table: toml::Table = text.parse().ok()?;
    let absent: Vec<String> = REQUIRED
        .iter()
        .filter(|k| !table.contains_key(**k))
        .map(|k| format!("`{k}`"))
        .collect();
    match absent.len() {
        0 => None,
        1 => Some(format!("missing key {}", absent[0])),
        _ => Some(format!("missing keys {}", absent.join(", "))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::Sidecar;
    use std::path::Path;

    const GOOD: &str = r#"kernel = "vectorAdd"
description = "c = a + b"
problem_size = ["n"]
outputs = ["c"]
default_block = [256, 1, 1]
bench = { n = 1024 }
inputs = { a = "randn", b = "randn", c = "zeros" }
flops = "n"
bytes = "12 * n"
"#;

    fn error_of(text: &str) -> String {
        Sidecar::from_toml(text, Path::new("k.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn every_missing_key_is_named_at_once() {
        let text = GOOD
            .replace("description = \"c = a + b\"\n", "")
            .replace("flops = \"n\"\n", "")
            .replace("bytes = \"12 * n\"\n", "");
        let err = error_of(&text);
        assert!(
            err.contains("missing keys `description`, `flops`, `bytes`"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_key_is_refused_with_its_line_and_the_allowed_keys() {
        let err = error_of(&format!("{GOOD}bogus = 3\n"));
        assert!(err.contains("line 10: unknown key `bogus`"), "{err}");
        assert!(err.contains("`problem_size`"), "{err}");
        assert!(!err.contains("field"), "{err}");
    }

    #[test]
    fn a_value_of_the_wrong_kind_says_what_is_allowed_in_sidecar_words() {
        let err = error_of(&GOOD.replace("n = 1024", "n = \"big\""));
        assert!(err.contains("line 6:"), "{err}");
        assert!(err.contains("expected a number"), "{err}");
        assert!(
            !err.contains("ScalarValue") && !err.contains("untagged"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_key_is_said_once_without_a_misleading_line() {
        let err = error_of(&GOOD.replace("flops = \"n\"\n", ""));
        assert_eq!(err.matches("missing key `flops`").count(), 1, "{err}");
        assert!(!err.contains("line 1"), "{err}");
    }

    #[test]
    fn sizes_take_numbers_and_quoted_expressions() {
        let sc = Sidecar::from_toml(
            &GOOD.replace("flops = \"n\"", "flops = 2.5"),
            Path::new("k.toml"),
        )
        .unwrap();
        assert_eq!(sc.flops.text(), "2.5");
        assert_eq!(sc.bytes.text(), "12 * n");
    }
}
