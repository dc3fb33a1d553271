//! The experiment design file (TOML).
//!
//! ```toml
//! name = "thesis"                 # names the default output directory: kt-experiments/<name>
//! description = "..."             # optional
//! root = ".."                     # paths below are relative to this, itself relative to the file (default ".")
//!
//! # Defaults for every study (each may be overridden inside a [[study]]):
//! kernels = ["naive-kernels/matmul.cu", "naive-kernels/mat*.cu",           # paths or globs (sorted)
//!            { path = "naive-kernels/multi.cu", kernel = "k2" }]          # `--kernel` for multi-kernel files
//! models = ["openai:gpt-4.1", "replay:experiments/cassettes/x.jsonl", "scripted:experiments/scripted/x.toml"]
//! repeats = 3                     # default 1
//! seeds = [11, 22, 33]            # one per repeat; default: the repeat index (0, 1, 2, ...)
//! settings = { tests = 3 }        # fixed `kt transform` flags for every cell (`--tests 3`)
//! strategies = ["one-prompt", "explicit",
//!               { name = "autonomous", settings = { candidates = 1 },
//!                 grid = { breakdown = [0, 3], replan = [0, 3] } }]        # grid: every combination
//! [budget]                        # per cell; all optional
//! time = "2h"                     # wall time over all attempts: 90s, 30m, 1h30m, or seconds
//! tokens = 2000000                # input + output tokens, from the run's llm.jsonl
//! dollars = 5.0                   # known LLM cost, from the run's llm.jsonl
//!
//! [llm_configs]                   # optional: how to reach a model, per model spec (a kt.toml with an [llm]
//! "openai:gemini-2.5-pro" = "experiments/llm/gemini-2.5-pro.toml"  # section: base_url, api_key_env,
//!                                 # structured_mode, ...), given to its cells as KT_CONFIG; not part of ids
//!
//! [[study]]                       # optional; without any, the file itself is one study named `name`
//! name = "breakdown-replan"
//! models = ["openai:gpt-4.1"]     # any default above can be replaced here
//! strategies = [{ name = "autonomous", grid = { breakdown = [0, 3], replan = [0, 3] } }]
//! ```
//!
//! Settings become `--key value` flags of `kt transform`; `strategy`, `llm`, `out`, `kernel` and `seed` are
//! set by the coordinator and may not appear. A cell's settings are the file's `settings`, then the study's,
//! then the strategy's fixed `settings`, then one point of its `grid` (later wins). The seed reaches the run
//! as `kt transform --seed N`. Paths of file-based providers (`replay:`, `scripted:`, `manual:`) are
//! relative to `root` like kernel paths, and `{kernel}` in a model spec stands for the kernel file's stem
//! (`scripted:experiments/scripted/{kernel}.toml` gives each kernel its own answers while the report still
//! treats it as one model).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::budget::{Budget, parse_duration};
use crate::error::ExperimentError;
use crate::settings::{RESERVED, SettingValue, is_flag_name};

/// A parsed, validated design.
#[derive(Debug, Clone)]
pub struct Design {
    pub name: String,
    pub description: Option<String>,
    /// The design file as given.
    pub file: PathBuf,
    /// Directory that relative kernel and provider paths are resolved against.
    pub root: PathBuf,
    pub studies: Vec<Study>,
    /// The LLM configuration file of a model spec (absolute), given to its cells as `KT_CONFIG`.
    pub llm_configs: BTreeMap<String, PathBuf>,
}

/// One block of the design: its cells are kernels × strategies (× grid points) × models × repeats.
#[derive(Debug, Clone)]
pub struct Study {
    pub name: String,
    pub description: Option<String>,
    pub kernels: Vec<KernelSpec>,
    pub strategies: Vec<StrategySpec>,
    pub models: Vec<String>,
    pub repeats: u32,
    pub seeds: Option<Vec<u64>>,
    pub settings: BTreeMap<String, SettingValue>,
    pub budget: Budget,
}

/// A kernel entry: a path or glob relative to the root, and optionally which kernel of the file to take.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum KernelSpec {
    Path(String),
    Entry {
        path: String,
        #[serde(default)]
        kernel: Option<String>,
    },
}

impl KernelSpec {
    pub fn pattern(&self) -> &str {
        match self {
            KernelSpec::Path(p) | KernelSpec::Entry { path: p, .. } => p,
        }
    }

    pub fn kernel(&self) -> Option<&str> {
        match self {
            KernelSpec::Path(_) => None,
            KernelSpec::Entry { kernel, .. } => kernel.as_deref(),
        }
    }
}

/// A strategy with its fixed settings and its grid of swept settings.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategySpec {
    pub name: String,
    pub settings: BTreeMap<String, SettingValue>,
    pub grid: BTreeMap<String, Vec<SettingValue>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StrategyFile {
    Name(String),
    Full(StrategyTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrategyTable {
    name: String,
    #[serde(default)]
    settings: BTreeMap<String, SettingValue>,
    #[serde(default)]
    grid: BTreeMap<String, Vec<SettingValue>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    time: Option<String>,
    tokens: Option<u64>,
    dollars: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct StudyFile {
    name: Option<String>,
    description: Option<String>,
    kernels: Option<Vec<KernelSpec>>,
    strategies: Option<Vec<StrategyFile>>,
    models: Option<Vec<String>>,
    repeats: Option<u32>,
    seeds: Option<Vec<u64>>,
    settings: Option<BTreeMap<String, SettingValue>>,
    budget: Option<BudgetFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DesignFile {
    name: String,
    description: Option<String>,
    root: Option<PathBuf>,
    kernels: Option<Vec<KernelSpec>>,
    strategies: Option<Vec<StrategyFile>>,
    models: Option<Vec<String>>,
    repeats: Option<u32>,
    seeds: Option<Vec<u64>>,
    settings: Option<BTreeMap<String, SettingValue>>,
    budget: Option<BudgetFile>,
    #[serde(default)]
    llm_configs: BTreeMap<String, PathBuf>,
    #[serde(default)]
    study: Vec<StudyFile>,
}

impl Design {
    /// Reads and validates a design file.
    pub fn load(path: &Path) -> Result<Design, ExperimentError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ExperimentError::io(path, "reading the design", e))?;
        Design::parse(&text, path)
    }

    /// Parses `text` as if it were the file at `path` (which sets the root).
    pub fn parse(text: &str, path: &Path) -> Result<Design, ExperimentError> {
        let file: DesignFile =
            toml::from_str(text).map_err(|e| ExperimentError::design(path, e.to_string()))?;
        check_slug(path, "name", &file.name)?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let root = match &file.root {
            Some(r) if r.is_absolute() => r.clone(),
            Some(r) => dir.join(r),
            None => dir.to_path_buf(),
        };
        // Absolute, because cells run in the root while the coordinator may run anywhere: a relative
        // root would be resolved twice.
        let root = std::path::absolute(&root).unwrap_or(root);

        let defaults = StudyFile {
            name: Some(file.name.clone()),
            description: None,
            kernels: file.kernels,
            strategies: file.strategies,
            models: file.models,
            repeats: file.repeats,
            seeds: file.seeds,
            settings: file.settings,
            budget: file.budget,
        };
        let studies = if file.study.is_empty() {
            vec![resolve_study(path, &defaults, StudyFile::default())?]
        } else {
            let mut names = std::collections::BTreeSet::new();
            let mut studies = Vec::new();
            for (i, s) in file.study.into_iter().enumerate() {
                let study = resolve_study(path, &defaults, s)
                    .map_err(|e| with_context(e, &format!("study {}", i + 1)))?;
                if !names.insert(study.name.clone()) {
                    return Err(ExperimentError::design(
                        path,
                        format!("two studies are named `{}`", study.name),
                    ));
                }
                studies.push(study);
            }
            studies
        };
        let mut llm_configs = BTreeMap::new();
        for (model, config) in file.llm_configs {
            let config = root.join(config);
            if !config.is_file() {
                return Err(ExperimentError::design(
                    path,
                    format!(
                        "llm_configs: `{}` (for {model}) is not a file; paths are relative to the root {}",
                        config.display(),
                        root.display()
                    ),
                ));
            }
            llm_configs.insert(model, config);
        }
        Ok(Design {
            name: file.name,
            description: file.description,
            file: path.to_path_buf(),
            root,
            studies,
            llm_configs,
        })
    }

    /// Where `kt experiment run` writes when no `--out` is given: `$KT_EXPERIMENTS_DIR/<name>`, else
    /// `./kt-experiments/<name>`.
    pub fn default_out_dir(&self) -> PathBuf {
        let base = std::env::var_os("KT_EXPERIMENTS_DIR")
            .map_or_else(|| PathBuf::from("kt-experiments"), PathBuf::from);
        base.join(&self.name)
    }
}

fn with_context(e: ExperimentError, context: &str) -> ExperimentError {
    match e {
        ExperimentError::Design { path, detail } => ExperimentError::Design {
            path,
            detail: format!("{context}: {detail}"),
        },
        other => other,
    }
}

fn check_slug(path: &Path, what: &str, value: &str) -> Result<(), ExperimentError> {
    let ok = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ExperimentError::design(
            path,
            format!("{what} `{value}` must be letters, digits, `-`, `_` or `.`"),
        ))
    }
}

fn check_settings(
    path: &Path,
    keys: impl IntoIterator<Item = impl AsRef<str>>,
) -> Result<(), ExperimentError> {
    for key in keys {
        let key = key.as_ref();
        if !is_flag_name(key) {
            return Err(ExperimentError::design(
                path,
                format!("setting `{key}` is not a flag name (lower-case letters, digits, dashes)"),
            ));
        }
        if RESERVED.contains(&key) {
            return Err(ExperimentError::design(
                path,
                format!(
                    "setting `{key}` is set by the experiment itself; use kernels/strategies/models instead"
                ),
            ));
        }
    }
    Ok(())
}

fn resolve_study(
    path: &Path,
    defaults: &StudyFile,
    study: StudyFile,
) -> Result<Study, ExperimentError> {
    let name = study
        .name
        .or_else(|| defaults.name.clone())
        .unwrap_or_default();
    check_slug(path, "study name", &name)?;
    let missing =
        |what: &str| ExperimentError::design(path, format!("study `{name}` has no {what}"));

    let kernels = study
        .kernels
        .or_else(|| defaults.kernels.clone())
        .ok_or_else(|| missing("kernels"))?;
    let models = study
        .models
        .or_else(|| defaults.models.clone())
        .ok_or_else(|| missing("models"))?;
    let strategies_file = match study.strategies {
        Some(s) => s,
        None => defaults
            .strategies
            .as_ref()
            .map(|s| s.iter().map(clone_strategy).collect())
            .ok_or_else(|| missing("strategies"))?,
    };
    if kernels.is_empty() || models.is_empty() || strategies_file.is_empty() {
        return Err(ExperimentError::design(
            path,
            format!("study `{name}` has an empty kernels, models or strategies list"),
        ));
    }
    for model in &models {
        if model.trim().is_empty() {
            return Err(ExperimentError::design(
                path,
                format!("study `{name}` lists an empty model"),
            ));
        }
    }

    let strategies = strategies_file
        .into_iter()
        .map(|s| strategy_spec(path, s))
        .collect::<Result<Vec<_>, _>>()?;
    let repeats = study.repeats.or(defaults.repeats).unwrap_or(1);
    let seeds = study.seeds.or_else(|| defaults.seeds.clone());
    check_repeats(path, &name, repeats, seeds.as_deref())?;
    let mut settings = defaults.settings.clone().unwrap_or_default();
    settings.extend(study.settings.unwrap_or_default());
    check_settings(path, settings.keys())?;
    let budget = budget_of(path, merge_budget(defaults.budget.as_ref(), study.budget))?;

    Ok(Study {
        name,
        description: study.description,
        kernels,
        strategies,
        models,
        repeats,
        seeds,
        settings,
        budget,
    })
}

/// One strategy of a study, with its settings and grid checked.
fn strategy_spec(path: &Path, s: StrategyFile) -> Result<StrategySpec, ExperimentError> {
    let spec = match s {
        StrategyFile::Name(name) => StrategySpec {
            name,
            settings: BTreeMap::new(),
            grid: BTreeMap::new(),
        },
        StrategyFile::Full(t) => StrategySpec {
            name: t.name,
            settings: t.settings,
            grid: t.grid,
        },
    };
    check_slug(path, "strategy", &spec.name)?;
    check_settings(path, spec.settings.keys())?;
    check_settings(path, spec.grid.keys())?;
    if let Some((key, _)) = spec.grid.iter().find(|(_, values)| values.is_empty()) {
        return Err(ExperimentError::design(
            path,
            format!("grid `{key}` of strategy `{}` has no values", spec.name),
        ));
    }
    Ok(spec)
}

/// At least one repeat, and one seed per repeat where seeds are given.
fn check_repeats(
    path: &Path,
    name: &str,
    repeats: u32,
    seeds: Option<&[u64]>,
) -> Result<(), ExperimentError> {
    if repeats == 0 {
        return Err(ExperimentError::design(
            path,
            format!("study `{name}`: repeats must be at least 1"),
        ));
    }
    if let Some(seeds) = seeds
        && seeds.len() != repeats as usize
    {
        return Err(ExperimentError::design(
            path,
            format!(
                "study `{name}`: {} seeds for {repeats} repeats; give one seed per repeat",
                seeds.len()
            ),
        ));
    }
    Ok(())
}

/// A study's budget, its time read as a duration and its dollars checked.
fn budget_of(path: &Path, budget_file: BudgetFile) -> Result<Budget, ExperimentError> {
    let time = match &budget_file.time {
        Some(t) => Some(parse_duration(t).ok_or_else(|| {
            ExperimentError::design(
                path,
                format!("budget time `{t}` is not a duration (90s, 30m, 1h30m, or seconds)"),
            )
        })?),
        None => None,
    };
    if budget_file
        .dollars
        .is_some_and(|d| !(d.is_finite() && d >= 0.0))
    {
        return Err(ExperimentError::design(
            path,
            "budget dollars must be a non-negative number",
        ));
    }
    Ok(Budget {
        time,
        tokens: budget_file.tokens,
        dollars: budget_file.dollars,
    })
}

fn clone_strategy(s: &StrategyFile) -> StrategyFile {
    match s {
        StrategyFile::Name(n) => StrategyFile::Name(n.clone()),
        StrategyFile::Full(t) => StrategyFile::Full(StrategyTable {
            name: t.name.clone(),
            settings: t.settings.clone(),
            grid: t.grid.clone(),
        }),
    }
}

fn merge_budget(defaults: Option<&BudgetFile>, study: Option<BudgetFile>) -> BudgetFile {
    let d = defaults.map_or_else(BudgetFile::default, |b| BudgetFile {
        time: b.time.clone(),
        ..*b
    });
    match study {
        None => d,
        Some(s) => BudgetFile {
            time: s.time.or(d.time),
            tokens: s.tokens.or(d.tokens),
            dollars: s.dollars.or(d.dollars),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
        name = "small"
        root = ".."
        kernels = ["naive-kernels/a.cu", { path = "naive-kernels/b.cu", kernel = "kb" }]
        models = ["scripted:experiments/s.toml"]
        repeats = 2
        settings = { tests = 1 }
        strategies = ["one-prompt", { name = "autonomous", settings = { candidates = 2 }, grid = { replan = [0, 3] } }]
        [budget]
        time = "10m"
        tokens = 1000
    "#;

    #[test]
    fn a_file_without_studies_is_one_study_with_its_defaults() {
        let d = Design::parse(SMALL, Path::new("experiments/small.toml")).unwrap();
        assert!(d.root.is_absolute());
        assert!(d.root.ends_with("experiments/.."), "{}", d.root.display());
        assert_eq!(d.studies.len(), 1);
        let s = &d.studies[0];
        assert_eq!(s.name, "small");
        assert_eq!(s.repeats, 2);
        assert_eq!(s.kernels[1].kernel(), Some("kb"));
        assert_eq!(
            s.strategies[1].grid["replan"],
            vec![SettingValue::Int(0), SettingValue::Int(3)]
        );
        assert_eq!(s.budget.time, Some(std::time::Duration::from_secs(600)));
        assert_eq!(s.budget.tokens, Some(1000));
    }

    #[test]
    fn studies_inherit_and_override_the_top_level_defaults() {
        let text = format!(
            "{SMALL}\n[[study]]\nname = \"main\"\n[[study]]\nname = \"other\"\nrepeats = 1\nmodels = [\"openai:gpt-4.1\"]\n[study.budget]\ndollars = 2.5\n"
        );
        let d = Design::parse(&text, Path::new("x.toml")).unwrap();
        assert_eq!(d.studies.len(), 2);
        assert_eq!(d.studies[0].repeats, 2);
        assert_eq!(d.studies[1].repeats, 1);
        assert_eq!(d.studies[1].models, ["openai:gpt-4.1"]);
        assert_eq!(d.studies[1].budget.dollars, Some(2.5));
        assert_eq!(
            d.studies[1].budget.tokens,
            Some(1000),
            "unset budget fields come from the defaults"
        );
    }

    #[test]
    fn reserved_or_malformed_settings_are_rejected_with_the_key() {
        let bad = SMALL.replace("settings = { tests = 1 }", "settings = { llm = 1 }");
        let e = Design::parse(&bad, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`llm`"), "{e}");
        let bad = SMALL.replace("settings = { tests = 1 }", "settings = { seed = 3 }");
        let e = Design::parse(&bad, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`seed`") && e.contains("set by the experiment"),
            "{e}"
        );
        let bad = SMALL.replace("settings = { tests = 1 }", "settings = { Tests = 1 }");
        assert!(Design::parse(&bad, Path::new("x.toml")).is_err());
    }

    #[test]
    fn seeds_must_match_repeats_and_unknown_keys_are_errors() {
        let bad = SMALL.replace("repeats = 2", "repeats = 2\nseeds = [1]");
        let e = Design::parse(&bad, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 seeds for 2 repeats"), "{e}");
        let bad = SMALL.replace("repeats = 2", "repeat = 2");
        assert!(Design::parse(&bad, Path::new("x.toml")).is_err());
    }

    #[test]
    fn a_bad_budget_time_names_the_value() {
        let bad = SMALL.replace("\"10m\"", "\"ten minutes\"");
        let e = Design::parse(&bad, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ten minutes"), "{e}");
    }
}
