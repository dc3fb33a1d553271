//! Per-field differences between two states, readable by a person: each field is compared leaf by leaf
//! (`best.kernel.code`, `plan[2].description`), multi-line strings — CUDA sources, prompts — become unified
//! diffs, other leaves are shown as old → new.

use serde::Serialize;
use serde_json::Value;
use similar::TextDiff;

use crate::record::Fields;

/// How one leaf changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LeafChange {
    /// A multi-line string: a unified diff (`---`/`+++` headers, `@@` hunks).
    Text { diff: String },
    /// Any other value (absent on a side: null).
    Value {
        before: Option<Value>,
        after: Option<Value>,
    },
}

/// A changed leaf inside a field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeafDiff {
    /// JSON path below the state, e.g. `best.kernel.code` or `history[3].status`.
    pub path: String,
    #[serde(flatten)]
    pub change: LeafChange,
}

/// One field that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    pub field: String,
    pub leaves: Vec<LeafDiff>,
}

/// Fields that differ between `before` and `after`, in `order` first (the state's declaration order), then any
/// other names.
pub fn diff_fields(before: &Fields, after: &Fields, order: &[String]) -> Vec<FieldChange> {
    let mut names: Vec<String> = order.to_vec();
    for k in before.keys().chain(after.keys()) {
        if !names.contains(k) {
            names.push(k.clone());
        }
    }
    names
        .into_iter()
        .filter_map(|field| {
            let (a, b) = (before.get(&field), after.get(&field));
            if a == b {
                return None;
            }
            let mut leaves = Vec::new();
            diff_value(&field, a, b, &mut leaves);
            Some(FieldChange { field, leaves })
        })
        .collect()
}

fn diff_value(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<LeafDiff>) {
    match (a, b) {
        (Some(x), Some(y)) if x == y => {}
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut keys: Vec<&String> = x.keys().collect();
            keys.extend(y.keys().filter(|k| !x.contains_key(*k)));
            for k in keys {
                diff_value(&format!("{path}.{k}"), x.get(k), y.get(k), out);
            }
        }
        // A structure appearing or vanishing is shown leaf by leaf, like any other change inside it.
        (Some(Value::Object(x)), None | Some(Value::Null)) => diff_value(
            path,
            Some(&Value::Object(x.clone())),
            Some(&Value::Object(Default::default())),
            out,
        ),
        (None | Some(Value::Null), Some(Value::Object(y))) => diff_value(
            path,
            Some(&Value::Object(Default::default())),
            Some(&Value::Object(y.clone())),
            out,
        ),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            for i in 0..x.len().max(y.len()) {
                diff_value(&format!("{path}[{i}]"), x.get(i), y.get(i), out);
            }
        }
        (x, y) if is_text(x) || is_text(y) => {
            let old = x.and_then(Value::as_str).unwrap_or("");
            let new = y.and_then(Value::as_str).unwrap_or("");
            out.push(LeafDiff {
                path: path.to_string(),
                change: LeafChange::Text {
                    diff: unified(path, old, new),
                },
            });
        }
        (x, y) => out.push(LeafDiff {
            path: path.to_string(),
            change: LeafChange::Value {
                before: x.cloned(),
                after: y.cloned(),
            },
        }),
    }
}

fn is_text(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| s.contains('\n'))
}

/// A unified diff of two texts with 3 lines of context, headed `a/<name>` and `b/<name>`.
pub fn unified(name: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// A one-line rendering of a JSON value for tables (long values shortened).
pub fn short(v: Option<&Value>) -> String {
    let s = match v {
        None => "(absent)".to_string(),
        Some(Value::String(s)) => format!("{s:?}"),
        Some(other) => other.to_string(),
    };
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(119).collect::<String>())
    } else {
        s
    }
}

/// The changes as text: one block per field, diffs indented under their path.
pub fn render_text(changes: &[FieldChange]) -> String {
    let mut out = String::new();
    for c in changes {
        out.push_str(&format!("== {} ==\n", c.field));
        for leaf in &c.leaves {
            match &leaf.change {
                LeafChange::Text { diff } => {
                    out.push_str(&format!("  {}:\n", leaf.path));
                    for line in diff.lines() {
                        out.push_str(&format!("    {line}\n"));
                    }
                }
                LeafChange::Value { before, after } => {
                    out.push_str(&format!(
                        "  {}: {} -> {}\n",
                        leaf.path,
                        short(before.as_ref()),
                        short(after.as_ref())
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Fields {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn code_inside_a_field_is_shown_as_a_unified_diff_and_scalars_as_old_to_new() {
        let a = fields(
            json!({"round": 1, "best": {"kernel": {"code": "a\nb\nc\n"}, "time_ms": 5.0}, "plan": ["x"]}),
        );
        let b = fields(
            json!({"round": 2, "best": {"kernel": {"code": "a\nB\nc\n"}, "time_ms": 4.0}, "plan": ["x"]}),
        );
        let d = diff_fields(&a, &b, &["round".into(), "best".into(), "plan".into()]);
        assert_eq!(
            d.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(),
            vec!["round", "best"]
        );
        let best = &d[1];
        assert_eq!(best.leaves.len(), 2);
        match &best.leaves[0].change {
            LeafChange::Text { diff } => {
                assert!(diff.contains("--- a/best.kernel.code"), "{diff}");
                assert!(diff.contains("-b\n") && diff.contains("+B\n"), "{diff}");
            }
            other => panic!("expected a text diff, got {other:?}"),
        }
        assert_eq!(best.leaves[1].path, "best.time_ms");
        let text = render_text(&d);
        assert!(text.contains("round: 1 -> 2"), "{text}");
    }

    #[test]
    fn appended_items_and_missing_fields_are_reported() {
        let a = fields(json!({"log": [1]}));
        let b = fields(json!({"log": [1, 2], "extra": true}));
        let d = diff_fields(&a, &b, &[]);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].leaves[0].path, "log[1]");
        assert_eq!(
            d[1].leaves[0].change,
            LeafChange::Value {
                before: None,
                after: Some(json!(true))
            }
        );
    }

    #[test]
    fn identical_states_have_no_diff() {
        let a = fields(json!({"x": {"y": "a\nb"}}));
        assert!(diff_fields(&a, &a.clone(), &[]).is_empty());
    }
}
