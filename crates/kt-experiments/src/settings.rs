//! A strategy setting's value, as written in a design and as passed on the `kt transform` command line
//! (`--replan 3`). Settings are kept as data rather than typed fields so that a new `kt transform` flag can
//! be swept without changing this crate.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One value of a setting. Integers cover the current flags (`replan`, `breakdown`, `candidates`, `tests`);
/// strings and booleans let a design pass anything else a future flag takes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    Int(i64),
    Bool(bool),
    Text(String),
}

impl fmt::Display for SettingValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingValue::Int(v) => write!(f, "{v}"),
            SettingValue::Bool(v) => write!(f, "{v}"),
            SettingValue::Text(v) => f.write_str(v),
        }
    }
}

/// Flags the coordinator sets itself; a design may not set them as settings (`seed` comes from the study's
/// `seeds`, else the repeat number).
pub(crate) const RESERVED: &[&str] = &["strategy", "llm", "out", "kernel", "seed", "help"];

/// Whether `key` can be a `kt transform` flag name (`--key`): lower-case letters, digits and dashes.
pub(crate) fn is_flag_name(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_from_toml_untagged_and_print_as_flag_values() {
        #[derive(Deserialize)]
        struct T {
            v: Vec<SettingValue>,
        }
        let t: T = toml::from_str(r#"v = [3, true, "off"]"#).unwrap();
        let shown: Vec<String> = t.v.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["3", "true", "off"]);
    }

    #[test]
    fn flag_names_are_lower_case_words_with_dashes() {
        assert!(is_flag_name("replan"));
        assert!(is_flag_name("max-steps"));
        assert!(!is_flag_name("Replan"));
        assert!(!is_flag_name("-x"));
        assert!(!is_flag_name("a b"));
    }
}
