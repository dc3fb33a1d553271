//! What calls cost: a price table per model (US dollars per million tokens), read from TOML. A default table
//! ships with the crate (`data/prices.toml`); users extend or override it with their own file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::LlmError;
use crate::usage::Usage;

const DEFAULT_TABLE: &str = include_str!("../data/prices.toml");

/// Price of one model, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    #[serde(default)]
    pub models: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The table shipped with kt.
    pub fn builtin() -> Self {
        // The shipped file is checked by a unit test; an empty table (every cost unknown) is the safe fallback.
        Self::parse(DEFAULT_TABLE).unwrap_or_default()
    }

    pub fn parse(text: &str) -> Result<Self, LlmError> {
        toml::from_str(text).map_err(|e| LlmError::Config {
            detail: format!("price table is not valid TOML: {e}"),
            fix: "use `[models.\"NAME\"]` tables with `input = ...` and `output = ...` (USD per million tokens)"
                .into(),
        })
    }

    /// Reads a user's table from a file.
    pub fn load(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::io(path, "reading the price table", e))?;
        Self::parse(&text)
    }

    /// Adds (or replaces) the entries of `other`.
    pub fn extend(&mut self, other: PriceTable) {
        self.models.extend(other.models);
    }

    /// The price of `model`: exact name, else the longest table entry that prefixes it.
    pub fn price(&self, model: &str) -> Option<Price> {
        if let Some(p) = self.models.get(model) {
            return Some(*p);
        }
        self.models
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, p)| *p)
    }

    /// Cost of one call, or `None` when the model has no price.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.price(model).map(|p| {
            (usage.input_tokens as f64 * p.input + usage.output_tokens as f64 * p.output)
                / 1_000_000.0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_table_parses_and_prices_known_models() {
        let t = PriceTable::parse(DEFAULT_TABLE).unwrap();
        assert!(t.models.len() >= 5);
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            estimated: false,
        };
        assert_eq!(t.cost("gpt-4.1", &u), Some(2.0 + 4.0));
    }

    #[test]
    fn longest_prefix_wins_and_unknown_model_has_no_cost() {
        let t = PriceTable::builtin();
        assert_eq!(t.price("gpt-4.1-mini-2025-04-14"), t.price("gpt-4.1-mini"));
        assert_ne!(t.price("gpt-4.1-mini"), t.price("gpt-4.1"));
        assert_eq!(t.cost("my-own-model", &Usage::default()), None);
    }

    #[test]
    fn user_table_overrides_and_extends() {
        let mut t = PriceTable::builtin();
        t.extend(PriceTable::parse("[models.\"gpt-4.1\"]\ninput = 1.0\noutput = 1.0\n[models.mine]\ninput = 3\noutput = 3\n").unwrap());
        assert_eq!(t.price("gpt-4.1").unwrap().input, 1.0);
        assert_eq!(t.price("mine").unwrap().output, 3.0);
        assert!(PriceTable::parse("models = 3").is_err());
    }
}
