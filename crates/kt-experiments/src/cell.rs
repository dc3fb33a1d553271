//! A cell: one `kt transform` run of the matrix, and its stable id.
//!
//! **Cell ids.** `<slug>-<hash>`, e.g. `matmul-autonomous-breakdown3-replan0-gpt-4.1-r2-5c1e09ab`.
//! The slug is for people: kernel, strategy, the grid point (`key` + `value` for each swept setting, in key
//! order), a short model name (the part after `provider:`, or `provider-<file stem>` for file-based providers)
//! and `r<repeat>`, reduced to `[A-Za-z0-9._-]`. The hash is for identity: the first 8 hex digits of the
//! BLAKE3 hash of the canonical JSON of the cell's *identity* — kernel file (as written, relative to the
//! root), `--kernel` choice, strategy, all settings, model spec, repeat and seed. The study, the budget and
//! the position in the file are not part of it, so reordering a design, moving the repository, adding kernels
//! or changing a budget keeps every existing id (and hence every finished run). Two studies that list the same
//! cell share it: it runs once and counts in both.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::budget::Budget;
use crate::settings::SettingValue;

/// A cell's id (`<slug>-<8 hex>`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CellId(pub String);

impl fmt::Display for CellId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl CellId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One run of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub id: CellId,
    /// Studies listing this cell, in file order.
    pub studies: Vec<String>,
    /// Kernel name: the `kernel` of the entry, else the file stem.
    pub kernel: String,
    /// The kernel file relative to the design's root, with `/` separators.
    pub kernel_file: String,
    /// `--kernel` for files holding several kernels.
    pub kernel_choice: Option<String>,
    pub strategy: String,
    /// The swept settings of this cell (its grid point); part of `settings` too.
    pub grid: BTreeMap<String, SettingValue>,
    /// Every `kt transform` flag of the cell, fixed and swept.
    pub settings: BTreeMap<String, SettingValue>,
    /// Provider spec as written (`openai:gpt-4.1`, `replay:experiments/cassettes/x.jsonl`).
    pub model: String,
    pub repeat: u32,
    pub seed: u64,
    pub budget: Budget,
}

#[derive(Serialize)]
struct Identity<'a> {
    kernel_file: &'a str,
    kernel_choice: Option<&'a str>,
    strategy: &'a str,
    settings: &'a BTreeMap<String, SettingValue>,
    model: &'a str,
    repeat: u32,
    seed: u64,
}

impl Cell {
    /// The strategy with its grid point, e.g. `autonomous[breakdown=3,replan=0]`, or just the strategy when
    /// nothing is swept. Reports group by this.
    pub fn variant(&self) -> String {
        variant_label(&self.strategy, &self.grid)
    }

    /// Computes the id from the identity fields (see the module docs).
    pub(crate) fn compute_id(&self) -> CellId {
        let identity = Identity {
            kernel_file: &self.kernel_file,
            kernel_choice: self.kernel_choice.as_deref(),
            strategy: &self.strategy,
            settings: &self.settings,
            model: &self.model,
            repeat: self.repeat,
            seed: self.seed,
        };
        // Serialising a struct of strings, integers and a BTreeMap cannot fail; the fallback keeps the id
        // computable anyway.
        let canonical = serde_json::to_string(&identity).unwrap_or_default();
        let hash = blake3::hash(canonical.as_bytes()).to_hex();
        let mut slug = vec![self.kernel.clone(), self.strategy.clone()];
        slug.extend(self.grid.iter().map(|(k, v)| format!("{k}{v}")));
        slug.push(model_short_name(&self.model));
        slug.push(format!("r{}", self.repeat));
        let mut slug = sanitise(&slug.join("-"));
        slug.truncate(80);
        CellId(format!("{slug}-{}", &hash[..8]))
    }
}

/// `strategy[k=v,...]` for the swept settings.
pub fn variant_label(strategy: &str, grid: &BTreeMap<String, SettingValue>) -> String {
    if grid.is_empty() {
        strategy.to_string()
    } else {
        let point: Vec<String> = grid.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{strategy}[{}]", point.join(","))
    }
}

/// `openai:gpt-4.1` → `gpt-4.1`; `replay:experiments/cassettes/demo.jsonl` → `replay-demo`.
pub fn model_short_name(spec: &str) -> String {
    match spec.split_once(':') {
        Some((provider, rest)) if matches!(provider, "replay" | "scripted" | "manual") => {
            let stem = std::path::Path::new(rest)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(rest);
            format!("{provider}-{stem}")
        }
        Some((_, model)) if !model.is_empty() => model.to_string(),
        _ => spec.to_string(),
    }
}

fn sanitise(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    // Collapse runs of dashes that replacements create.
    let mut out = String::with_capacity(mapped.len());
    for c in mapped.chars() {
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
impl Cell {
    /// A cell of kernel `k` (k.cu) with no settings, for unit tests.
    pub(crate) fn for_test(id: &str, strategy: &str, model: &str) -> Cell {
        Cell {
            id: CellId(id.into()),
            studies: vec![],
            kernel: "k".into(),
            kernel_file: "k.cu".into(),
            kernel_choice: None,
            strategy: strategy.into(),
            grid: BTreeMap::new(),
            settings: BTreeMap::new(),
            model: model.into(),
            repeat: 0,
            seed: 0,
            budget: Budget::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell() -> Cell {
        let mut grid = BTreeMap::new();
        grid.insert("replan".to_string(), SettingValue::Int(3));
        let mut settings = grid.clone();
        settings.insert("tests".to_string(), SettingValue::Int(3));
        Cell {
            id: CellId(String::new()),
            studies: vec!["main".into()],
            kernel: "matrixMultiply".into(),
            kernel_file: "naive-kernels/matmul.cu".into(),
            kernel_choice: None,
            strategy: "autonomous".into(),
            grid,
            settings,
            model: "openai:gpt-4.1".into(),
            repeat: 2,
            seed: 2,
            budget: Budget::default(),
        }
    }

    #[test]
    fn id_is_a_readable_slug_plus_a_hash_of_the_identity() {
        let id = cell().compute_id();
        assert!(
            id.0.starts_with("matrixMultiply-autonomous-replan3-gpt-4.1-r2-"),
            "{id}"
        );
        assert_eq!(
            id.0.len(),
            "matrixMultiply-autonomous-replan3-gpt-4.1-r2-".len() + 8
        );
    }

    #[test]
    fn id_ignores_study_and_budget_but_not_settings_or_seed() {
        let base = cell();
        let mut other = base.clone();
        other.studies = vec!["elsewhere".into()];
        other.budget.tokens = Some(5);
        assert_eq!(base.compute_id(), other.compute_id());

        let mut other = base.clone();
        other.settings.insert("tests".into(), SettingValue::Int(5));
        assert_ne!(
            base.compute_id(),
            other.compute_id(),
            "a fixed setting is part of the identity"
        );
        let mut other = base.clone();
        other.seed = 9;
        assert_ne!(base.compute_id(), other.compute_id());
    }

    #[test]
    fn model_names_are_shortened_for_slugs() {
        assert_eq!(model_short_name("openai:gpt-4.1"), "gpt-4.1");
        assert_eq!(
            model_short_name("replay:experiments/cassettes/demo.jsonl"),
            "replay-demo"
        );
        assert_eq!(model_short_name("ollama:qwen3:8b"), "qwen3:8b");
        assert_eq!(sanitise("qwen3:8b//x"), "qwen3-8b-x");
    }

    #[test]
    fn variant_lists_the_grid_point() {
        assert_eq!(cell().variant(), "autonomous[replan=3]");
        assert_eq!(variant_label("explicit", &BTreeMap::new()), "explicit");
    }
}
