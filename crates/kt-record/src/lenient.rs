//! Reading a record leniently: a field of the wrong type reads as its default (absent) instead of failing the
//! whole record. Records outlive the kt that wrote them; a reader of an old, partial or newer record should
//! still see every field it can.

use serde::{Deserialize, Deserializer};

/// `#[serde(default, deserialize_with = "crate::lenient::or_default")]`: the field's value when it reads as
/// `T`, else `T::default()`.
pub fn or_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Record {
        #[serde(deserialize_with = "super::or_default")]
        speedup: Option<f64>,
        #[serde(deserialize_with = "super::or_default")]
        tokens: u64,
    }

    #[test]
    fn a_wrongly_typed_field_reads_as_absent_and_the_others_are_kept() {
        let r: Record = serde_json::from_str(r#"{"speedup": "fast", "tokens": 5}"#).unwrap();
        assert_eq!(
            r,
            Record {
                speedup: None,
                tokens: 5
            }
        );
        let r: Record = serde_json::from_str("{}").unwrap();
        assert_eq!(r, Record::default());
    }
}
