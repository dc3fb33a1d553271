//! Schema-guided coercion: where the JSON schema wants a number and the answer has `"16"`, or wants a string
//! and the answer has `{"step": "…"}`, the value is changed to what was meant and the change is noted. Only
//! unambiguous changes are made; anything else is left for serde to reject with its own message.

use serde_json::{Map, Value};

/// Fields of an object taken as its text when the schema wants a string (plan steps given as objects).
const TEXT_FIELDS: [&str; 4] = ["step", "description", "text", "name"];

/// Deeper than this the schema is taken to be recursive and coercion stops.
const MAX_DEPTH: usize = 64;

/// Changes `value` in place towards `schema` (a JSON schema as schemars writes it: `$ref` into `$defs` or
/// `definitions`, `anyOf` for options, `type` as a word or a list). Each change is described in `repairs`.
pub(crate) fn coerce(value: &mut Value, schema: &Value, repairs: &mut Vec<String>) {
    Walker {
        root: schema,
        repairs,
    }
    .walk(value, schema, "$", 0);
}

struct Walker<'a> {
    root: &'a Value,
    repairs: &'a mut Vec<String>,
}

impl<'a> Walker<'a> {
    /// The schema itself, with `$ref`, single-entry `allOf` and the non-null branch of an option followed.
    fn resolve(&self, mut schema: &'a Value, value: &Value) -> &'a Value {
        for _ in 0..MAX_DEPTH {
            if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
                match target.strip_prefix('#').and_then(|p| self.root.pointer(p)) {
                    Some(s) => schema = s,
                    None => return schema,
                }
            } else if let Some([only]) = schema
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                schema = only;
            } else if let Some(branches) = schema
                .get("anyOf")
                .or_else(|| schema.get("oneOf"))
                .and_then(Value::as_array)
            {
                let non_null: Vec<&Value> = branches
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
                match non_null.as_slice() {
                    // `null` stays null when the schema allows it.
                    _ if value.is_null() => return schema,
                    [one] => schema = one,
                    _ => return schema,
                }
            } else {
                return schema;
            }
        }
        schema
    }

    fn walk(&mut self, value: &mut Value, schema: &'a Value, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let schema = self.resolve(schema, value);
        let types = wanted_types(schema);
        if !types.is_empty() && !types.iter().any(|t| matches_type(value, t)) {
            self.convert(value, &types, schema, path, depth);
        }
        match value {
            Value::Object(map) => self.walk_object(map, schema, path, depth),
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.walk(item, item_schema, &format!("{path}[{i}]"), depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    fn walk_object(
        &mut self,
        map: &mut Map<String, Value>,
        schema: &'a Value,
        path: &str,
        depth: usize,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties").filter(|s| s.is_object());
        for (key, field) in map.iter_mut() {
            let field_schema = properties.and_then(|p| p.get(key)).or(additional);
            if let Some(s) = field_schema {
                self.walk(field, s, &format!("{path}.{key}"), depth + 1);
            }
        }
    }

    /// Turns `value` into one of `types` when there is one obvious way to.
    fn convert(
        &mut self,
        value: &mut Value,
        types: &[&str],
        schema: &'a Value,
        path: &str,
        depth: usize,
    ) {
        let wants = |t: &str| types.contains(&t);
        let before = short(value);
        let converted = match &*value {
            Value::String(s) if wants("integer") || wants("number") => {
                number_from_text(s, wants("integer"))
            }
            Value::String(s) if wants("boolean") => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" => Some(Value::Bool(true)),
                "false" | "no" => Some(Value::Bool(false)),
                _ => None,
            },
            Value::Number(n) if wants("integer") => n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| Value::from(f as i64)),
            Value::Number(_) | Value::Bool(_) if wants("string") => {
                Some(Value::String(value.to_string()))
            }
            Value::Object(map) if wants("string") => TEXT_FIELDS
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
                .map(|s| Value::String(s.to_string())),
            Value::Null | Value::Array(_) => None,
            single if wants("array") => {
                let mut one = single.clone();
                if let Some(items) = schema.get("items").filter(|s| s.is_object()) {
                    self.walk(&mut one, items, &format!("{path}[0]"), depth + 1);
                }
                Some(Value::Array(vec![one]))
            }
            _ => None,
        };
        if let Some(new) = converted {
            self.repairs
                .push(format!("{path}: {before} read as {}", short(&new)));
            *value = new;
        }
    }
}

/// The JSON types a schema allows (`type` as a word or a list; an object with `properties` is an object).
fn wanted_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if schema.get("properties").is_some() => vec!["object"],
        _ => Vec::new(),
    }
}

fn matches_type(value: &Value, t: &str) -> bool {
    match t {
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// `"16"`, `" 2.5 "`, `"1e3"` as a number; for an integer only whole values.
fn number_from_text(s: &str, integer: bool) -> Option<Value> {
    let t = s.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::from(i));
    }
    let f = t.parse::<f64>().ok().filter(|f| f.is_finite())?;
    if integer {
        (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| Value::from(f as i64))
    } else {
        serde_json::Number::from_f64(f).map(Value::Number)
    }
}

/// A value as it appears in a repair note: short, on one line.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn coerced(mut value: Value, schema: Value) -> (Value, Vec<String>) {
        let mut repairs = Vec::new();
        coerce(&mut value, &schema, &mut repairs);
        (value, repairs)
    }

    #[test]
    fn numbers_given_as_strings_become_numbers_through_refs() {
        let schema = json!({
            "type": "object",
            "properties": {"parameters": {"type": "array", "items": {"$ref": "#/$defs/P"}}},
            "$defs": {"P": {"type": "object", "properties": {
                "name": {"type": "string"},
                "values": {"type": "array", "items": {"type": "integer", "format": "int64"}}}}}
        });
        let (v, repairs) = coerced(
            json!({"parameters": [{"name": "TILE", "values": ["16", 32, " 64 ", "8.0"]}]}),
            schema,
        );
        assert_eq!(v["parameters"][0]["values"], json!([16, 32, 64, 8]));
        assert_eq!(repairs.len(), 3, "{repairs:?}");
        assert!(
            repairs[0].starts_with("$.parameters[0].values[0]: \"16\" read as 16"),
            "{repairs:?}"
        );
    }

    #[test]
    fn an_object_where_a_string_is_wanted_gives_its_text_field() {
        let schema = json!({"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}}}});
        let (v, repairs) = coerced(
            json!({"steps": [{"step": "tile the loop", "why": "reuse"}, "unroll", {"description": "vectorise"}]}),
            schema,
        );
        assert_eq!(v["steps"], json!(["tile the loop", "unroll", "vectorise"]));
        assert_eq!(repairs.len(), 2);
    }

    #[test]
    fn options_booleans_and_single_values_are_coerced() {
        let schema = json!({"type": "object", "properties": {
            "valid": {"type": "boolean"},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "names": {"type": ["array", "null"], "items": {"type": "string"}},
            "reason": {"type": "string"}}});
        let (v, _) = coerced(
            json!({"valid": "No", "limit": "7", "names": "x", "reason": 3}),
            schema.clone(),
        );
        assert_eq!(
            v,
            json!({"valid": false, "limit": 7, "names": ["x"], "reason": "3"})
        );
        let (v, repairs) = coerced(json!({"limit": null, "names": null}), schema);
        assert_eq!(v, json!({"limit": null, "names": null}));
        assert!(repairs.is_empty());
    }

    #[test]
    fn what_cannot_be_meant_is_left_for_serde_to_reject() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}});
        let (v, repairs) = coerced(
            json!({"n": "many", "s": {"other": 1}, "extra": "16"}),
            schema,
        );
        assert_eq!(v, json!({"n": "many", "s": {"other": 1}, "extra": "16"}));
        assert!(repairs.is_empty());
    }

    #[test]
    fn maps_follow_additional_properties() {
        let schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        let (v, _) = coerced(json!({"BLOCK": "128"}), schema);
        assert_eq!(v, json!({"BLOCK": 128}));
    }
}
