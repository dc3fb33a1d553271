//! One value of a tunable parameter, of any kind Kernel Tuner allows: an integer (`block_size_x = 128`), a
//! float (`alpha = 0.5`), a boolean (`use_shared = True`) or a string (`unroll = "#pragma unroll"`, `T =
//! "float"`). Each becomes `#define NAME TEXT` with Python's `str()` of the value as the text, as Kernel
//! Tuner writes it, and the same text is its part of a Kernel Tuner cache key.
//!
//! It deliberately holds no expression logic: restrictions see these values through `expr.rs`.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

/// A tunable parameter's value. In JSON and TOML it is the plain value (`128`, `0.5`, `true`, `"float"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl ParamValue {
    /// The integer, when the value is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            ParamValue::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as a number for sizes and launch expressions: integers, floats, and booleans as 1 or 0;
    /// none for a string.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            ParamValue::Int(v) => Some(*v as f64),
            ParamValue::Float(v) => Some(*v),
            ParamValue::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            ParamValue::Str(_) => None,
        }
    }

    /// The kind's name, as a GPU programmer would say it in an error.
    pub fn kind(&self) -> &'static str {
        match self {
            ParamValue::Int(_) => "an integer",
            ParamValue::Float(_) => "a float",
            ParamValue::Bool(_) => "a boolean",
            ParamValue::Str(_) => "a string",
        }
    }

    /// Reads a value written on a command line: an integer, a float, `True`/`False` (or `true`/`false`), a
    /// quoted string (`'float'`, `"a b"`), or else the text itself as a string.
    pub fn parse(text: &str) -> ParamValue {
        let t = text.trim();
        if let Ok(i) = t.parse::<i64>() {
            return ParamValue::Int(i);
        }
        if let Ok(f) = t.parse::<f64>()
            && t.chars().any(|c| c.is_ascii_digit())
        {
            return ParamValue::Float(f);
        }
        match t {
            "True" | "true" => return ParamValue::Bool(true),
            "False" | "false" => return ParamValue::Bool(false),
            _ => {}
        }
        let quoted = t.len() >= 2
            && ((t.starts_with('\'') && t.ends_with('\''))
                || (t.starts_with('"') && t.ends_with('"')));
        if quoted {
            ParamValue::Str(t[1..t.len() - 1].to_string())
        } else {
            ParamValue::Str(t.to_string())
        }
    }

    /// Reads a comma-separated list of values (`16,32,64`, `'float','double'`, `0.5,1.0`); a comma inside
    /// quotes is part of its string.
    pub fn parse_list(text: &str) -> Vec<ParamValue> {
        let mut items = Vec::new();
        let (mut current, mut quote) = (String::new(), None);
        for c in text.chars() {
            match (c, quote) {
                ('\'' | '"', None) => quote = Some(c),
                (q, Some(open)) if q == open => quote = None,
                (',', None) => {
                    items.push(ParamValue::parse(&current));
                    current.clear();
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        items.push(ParamValue::parse(&current));
        items
    }

    fn rank(&self) -> u8 {
        match self {
            ParamValue::Int(_) => 0,
            ParamValue::Float(_) => 1,
            ParamValue::Bool(_) => 2,
            ParamValue::Str(_) => 3,
        }
    }
}

/// Python's `repr` of a float (`1.0`, `0.1`, `1e-07`, `1e+16`, `inf`, `nan`): Kernel Tuner writes float
/// values into defines and cache keys this way, so kt must too for its caches to be read back.
pub fn python_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Rust's `{:e}` gives the shortest digits that round-trip, as Python's repr does.
    let sci = format!("{v:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp >= n - 1 {
            format!("{digits}{}.0", "0".repeat((exp - n + 1) as usize))
        } else if exp >= 0 {
            let (a, b) = digits.split_at(exp as usize + 1);
            format!("{a}.{b}")
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let m = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    }
}

/// Python's `str()` of the value: `128`, `0.5`, `True`, `float`.
impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => f.write_str(&python_float(*v)),
            ParamValue::Bool(true) => f.write_str("True"),
            ParamValue::Bool(false) => f.write_str("False"),
            ParamValue::Str(s) => f.write_str(s),
        }
    }
}

// Floats compare by their bits so that a value list can be searched, sorted and hashed like integers.
impl PartialEq for ParamValue {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ParamValue {}

impl PartialOrd for ParamValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ParamValue {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (ParamValue::Int(a), ParamValue::Int(b)) => a.cmp(b),
            (ParamValue::Float(a), ParamValue::Float(b)) => a.total_cmp(b),
            (ParamValue::Bool(a), ParamValue::Bool(b)) => a.cmp(b),
            (ParamValue::Str(a), ParamValue::Str(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl Hash for ParamValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            ParamValue::Int(v) => v.hash(state),
            ParamValue::Float(v) => v.to_bits().hash(state),
            ParamValue::Bool(v) => v.hash(state),
            ParamValue::Str(v) => v.hash(state),
        }
    }
}

impl From<i64> for ParamValue {
    fn from(v: i64) -> Self {
        ParamValue::Int(v)
    }
}

impl From<i32> for ParamValue {
    fn from(v: i32) -> Self {
        ParamValue::Int(v.into())
    }
}

impl From<u32> for ParamValue {
    fn from(v: u32) -> Self {
        ParamValue::Int(v.into())
    }
}

impl From<f64> for ParamValue {
    fn from(v: f64) -> Self {
        ParamValue::Float(v)
    }
}

impl From<bool> for ParamValue {
    fn from(v: bool) -> Self {
        ParamValue::Bool(v)
    }
}

impl From<&str> for ParamValue {
    fn from(v: &str) -> Self {
        ParamValue::Str(v.to_string())
    }
}

impl From<String> for ParamValue {
    fn from(v: String) -> Self {
        ParamValue::Str(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_written_as_python_writes_them() {
        for (v, s) in [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (0.1, "0.1"),
            (-2.25, "-2.25"),
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456.0, "123456.0"),
            (1e15, "1000000000000000.0"),
        ] {
            assert_eq!(python_float(v), s, "{v}");
        }
    }

    #[test]
    fn command_line_text_reads_as_the_kind_it_looks_like() {
        assert_eq!(ParamValue::parse("32"), ParamValue::Int(32));
        assert_eq!(ParamValue::parse("0.5"), ParamValue::Float(0.5));
        assert_eq!(ParamValue::parse("True"), ParamValue::Bool(true));
        assert_eq!(
            ParamValue::parse("'float'"),
            ParamValue::Str("float".into())
        );
        assert_eq!(
            ParamValue::parse("double"),
            ParamValue::Str("double".into())
        );
        // `inf` and `nan` are words a user means as text, not floats
        assert_eq!(ParamValue::parse("inf"), ParamValue::Str("inf".into()));
    }

    #[test]
    fn a_list_splits_at_commas_outside_quotes() {
        assert_eq!(
            ParamValue::parse_list("1, 'a,b', \"c\""),
            vec![
                ParamValue::Int(1),
                ParamValue::Str("a,b".into()),
                ParamValue::Str("c".into())
            ]
        );
    }

    #[test]
    fn values_print_as_python_str_and_round_trip_through_json() {
        let values = vec![
            ParamValue::Int(4),
            ParamValue::Float(1.0),
            ParamValue::Bool(false),
            ParamValue::Str("#pragma unroll".into()),
        ];
        let shown: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        assert_eq!(shown, ["4", "1.0", "False", "#pragma unroll"]);
        let json = serde_json::to_string(&values).unwrap();
        assert_eq!(json, r##"[4,1.0,false,"#pragma unroll"]"##);
        let back: Vec<ParamValue> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, values);
    }

    #[test]
    fn values_of_different_kinds_are_never_equal() {
        assert_ne!(ParamValue::Int(1), ParamValue::Float(1.0));
        assert_ne!(ParamValue::Int(1), ParamValue::Bool(true));
        assert!(ParamValue::Float(0.25) < ParamValue::Float(0.5));
    }
}
