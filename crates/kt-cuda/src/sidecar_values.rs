//! The values a sidecar holds, [`SizeExpr`] and [`ScalarValue`], and how each is read from its text:
//! exactly what a sidecar allows, and a refusal that names it (`"a number (e.g. 1024 or 0.5)"`).

use serde::Serialize;
use serde::de::{self, Deserializer, Visitor};

/// A number or an expression over scalar parameter names (`"width*height"`, `256`). Read as text
/// below, refusing what a sidecar does not allow with what it does.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum SizeExpr {
    Int(i64),
    Float(f64),
    Expr(String),
}

impl SizeExpr {
    /// The expression as text (numbers formatted as numbers).
    pub fn text(&self) -> String {
        match self {
            SizeExpr::Int(v) => v.to_string(),
            SizeExpr::Float(v) => v.to_string(),
            SizeExpr::Expr(s) => s.clone(),
        }
    }
}

/// A scalar argument value (an integer or a float, as written).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
#[serde(untagged)]
pub enum ScalarValue {
    Int(i64),
    Float(f64),
}

impl std::fmt::Display for ScalarValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScalarValue::Int(v) => write!(f, "{v}"),
            ScalarValue::Float(v) => write!(f, "{v:?}"),
        }
    }
}

/// An unsigned number of the text as the signed integer a sidecar holds.
fn signed<E: de::Error>(v: u64) -> Result<i64, E> {
    i64::try_from(v).map_err(|_| E::custom(format!("{v} is too large for a 64-bit integer")))
}

struct ScalarVisitor;

impl Visitor<'_> for ScalarVisitor {
    type Value = ScalarValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a number (e.g. 1024 or 0.5)")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ScalarValue, E> {
        Ok(ScalarValue::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ScalarValue, E> {
        signed(v).map(ScalarValue::Int)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ScalarValue, E> {
        Ok(ScalarValue::Float(v))
    }
}

impl<'de> serde::Deserialize<'de> for ScalarValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct SizeVisitor;

impl Visitor<'_> for SizeVisitor {
    type Value = SizeExpr;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(
            "a number or an expression over scalar parameters in quotes (e.g. 256 or \"4 * n\")",
        )
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SizeExpr, E> {
        Ok(SizeExpr::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SizeExpr, E> {
        signed(v).map(SizeExpr::Int)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<SizeExpr, E> {
        Ok(SizeExpr::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<SizeExpr, E> {
        Ok(SizeExpr::Expr(v.to_string()))
    }
}

impl<'de> serde::Deserialize<'de> for SizeExpr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SizeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::{ScalarValue, SizeExpr};

    #[derive(serde::Deserialize)]
    struct Values {
        size: Vec<SizeExpr>,
        scalar: ScalarValue,
    }

    #[test]
    fn sizes_and_scalars_keep_the_kind_they_were_written_as() {
        let v: Values = toml::from_str("size = [256, 2.5, \"4 * n\"]\nscalar = 7")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            v.size,
            vec![
                SizeExpr::Int(256),
                SizeExpr::Float(2.5),
                SizeExpr::Expr("4 * n".into())
            ]
        );
        assert_eq!(v.scalar, ScalarValue::Int(7));
        assert_eq!(v.size[2].text(), "4 * n");
    }

    #[test]
    fn a_scalar_that_is_no_number_is_refused_with_what_is_allowed() {
        let e = toml::from_str::<Values>("size = []\nscalar = \"big\"")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("a number (e.g. 1024 or 0.5)"), "{e}");
    }
}
