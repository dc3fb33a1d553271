//! A kernel's valid sizes (sidecar key `size_rules`): a size scalar that must be a multiple of some k (a
//! kernel that reads `float4` or whole tiles without bounds checks) or at least some minimum. kt's odd-size,
//! large and bench tests move such a size to the nearest valid value above and say so, instead of calling
//! the kernel at sizes its program never uses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The rule for one size scalar: `n = { multiple_of = 4, min = 16 }`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiple_of: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
}

impl SizeRule {
    /// The smallest valid value at or above `value`.
    pub fn nearest_valid(&self, value: u64) -> u64 {
        let v = value.max(self.min.unwrap_or(0));
        match self.multiple_of {
            Some(k) if k > 1 => v.div_ceil(k).saturating_mul(k),
            _ => v,
        }
    }

    /// `a multiple of 4, at least 16`, for messages.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = [
            self.multiple_of.map(|k| format!("a multiple of {k}")),
            self.min.map(|m| format!("at least {m}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        parts.join(", ")
    }
}

/// Moves each value that a rule names to its nearest valid value; a line per value moved
/// (`n=10012: a multiple of 4 (size_rules)`).
pub fn apply_size_rules(
    values: &mut BTreeMap<String, f64>,
    rules: &BTreeMap<String, SizeRule>,
) -> Vec<String> {
    let mut moved = Vec::new();
    for (name, rule) in rules {
        if let Some(v) = values.get_mut(name) {
            let was = v.max(0.0) as u64;
            let valid = rule.nearest_valid(was);
            if valid != was {
                *v = valid as f64;
                moved.push(format!("{name}={valid}: {} (size_rules)", rule.describe()));
            }
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_valid_size_is_above_and_a_multiple_and_at_least_the_minimum() {
        let rule = SizeRule {
            multiple_of: Some(4),
            min: Some(16),
        };
        assert_eq!(rule.nearest_valid(10009), 10012);
        assert_eq!(rule.nearest_valid(10012), 10012);
        assert_eq!(rule.nearest_valid(3), 16);
        assert_eq!(SizeRule::default().nearest_valid(7), 7);
        assert_eq!(rule.describe(), "a multiple of 4, at least 16");
        let rules = BTreeMap::from([("n".to_string(), rule)]);
        let mut values = BTreeMap::from([("n".to_string(), 10009.0), ("m".to_string(), 3.0)]);
        let moved = apply_size_rules(&mut values, &rules);
        assert_eq!(values["n"], 10012.0);
        assert_eq!(values["m"], 3.0);
        assert_eq!(
            moved,
            ["n=10012: a multiple of 4, at least 16 (size_rules)"]
        );
        assert!(apply_size_rules(&mut values, &rules).is_empty());
    }

    #[test]
    fn a_rule_parses_from_toml_and_a_misspelt_key_is_refused() {
        let rule: SizeRule = toml::from_str("multiple_of = 32\nmin = 64").unwrap();
        assert_eq!(rule.multiple_of, Some(32));
        assert!(toml::from_str::<SizeRule>("multiple = 32").is_err());
    }
}
