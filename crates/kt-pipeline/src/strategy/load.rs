//! Finding and parsing strategy files. The files in `strategies/` win; the copies compiled into the binary are
//! the fallback, so an installed `kt` works outside the repository.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::config::{Strategy, StrategyKind, StrategyPrompts, StrategySettings};
use super::explicit::{ExplicitStep, order_steps};
use crate::error::PipelineError;
use kt_record::RunDir;

/// The strategies shipped with kt: (name, file text).
pub const BUILTIN_STRATEGIES: &[(&str, &str)] = &[
    (
        "one-prompt",
        include_str!("../../../../strategies/one-prompt.toml"),
    ),
    (
        "explicit",
        include_str!("../../../../strategies/explicit.toml"),
    ),
    (
        "autonomous",
        include_str!("../../../../strategies/autonomous.toml"),
    ),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrategyFile {
    name: String,
    kind: StrategyKind,
    #[serde(default)]
    description: String,
    #[serde(default)]
    settings: Option<StrategySettings>,
    /// one-prompt: `[prompt] template = "..."`.
    #[serde(default)]
    prompt: Option<OnePromptSection>,
    #[serde(default)]
    prompts: Option<StrategyPrompts>,
    #[serde(default)]
    steps: Vec<ExplicitStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OnePromptSection {
    template: String,
}

/// Parses and checks one strategy file's text.
pub fn parse_strategy(text: &str, origin: &str) -> Result<Strategy, PipelineError> {
    let invalid = |message: String| PipelineError::StrategyInvalid {
        origin: origin.to_string(),
        message,
    };
    let file: StrategyFile = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let mut prompts = file.prompts.unwrap_or_default();
    if let Some(p) = file.prompt {
        prompts.one_prompt = p.template;
    }
    let settings = file.settings.unwrap_or_default();
    if settings.max_attempts == 0 {
        return Err(invalid("settings.max_attempts must be at least 1".into()));
    }
    if !(0.0..1.0).contains(&settings.acceptance_threshold) {
        return Err(invalid(format!(
            "settings.acceptance_threshold is {}; it is a fraction of the best time, in [0, 1)",
            settings.acceptance_threshold
        )));
    }
    let steps = match file.kind {
        StrategyKind::Explicit => {
            if file.steps.is_empty() {
                return Err(invalid(
                    "an explicit strategy needs at least one [[steps]] entry".into(),
                ));
            }
            order_steps(file.steps).map_err(invalid)?
        }
        _ if !file.steps.is_empty() => {
            return Err(invalid(format!(
                "[[steps]] belong to explicit strategies; this one is {}",
                file.kind
            )));
        }
        _ => Vec::new(),
    };
    Ok(Strategy {
        name: file.name,
        kind: file.kind,
        description: file.description,
        settings,
        prompts,
        steps,
        origin: origin.to_string(),
        hash: blake3::hash(text.as_bytes()).to_hex()[..16].to_string(),
        text: text.to_string(),
    })
}

/// The strategies directory: `$KT_STRATEGIES_DIR`, else `strategies/` in the current directory or one of its
/// ancestors (so `kt` works from a sub-directory of the repository).
pub fn find_strategies_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("KT_STRATEGIES_DIR") {
        return Some(PathBuf::from(dir));
    }
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors()
        .map(|a| a.join("strategies"))
        .find(|p| p.is_dir())
}

/// Loads a strategy by name (`autonomous`) or path (`my/strategy.toml`). A name is looked up in `dir` (or the
/// directory [`find_strategies_dir`] finds), then among the built-in strategies.
pub fn load_strategy(name_or_path: &str, dir: Option<&Path>) -> Result<Strategy, PipelineError> {
    let as_path = Path::new(name_or_path);
    if name_or_path.ends_with(".toml") || as_path.components().count() > 1 {
        let text = std::fs::read_to_string(as_path)
            .map_err(|e| PipelineError::io("reading strategy", as_path, e))?;
        return parse_strategy(&text, &as_path.display().to_string());
    }
    let dir = dir.map(Path::to_path_buf).or_else(find_strategies_dir);
    let mut searched = Vec::new();
    let mut available: Vec<String> = BUILTIN_STRATEGIES
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    if let Some(dir) = &dir {
        let file = dir.join(format!("{name_or_path}.toml"));
        searched.push(dir.display().to_string());
        if file.is_file() {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| PipelineError::io("reading strategy", &file, e))?;
            return parse_strategy(&text, &file.display().to_string());
        }
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "toml")
                    && let Some(stem) = p.file_stem()
                {
                    available.push(stem.to_string_lossy().into_owned());
                }
            }
        }
    }
    searched.push("built-in".into());
    if let Some((_, text)) = BUILTIN_STRATEGIES.iter().find(|(n, _)| *n == name_or_path) {
        return parse_strategy(text, &format!("built-in {name_or_path}"));
    }
    available.sort();
    available.dedup();
    Err(PipelineError::StrategyNotFound {
        name: name_or_path.to_string(),
        searched: searched.join(", "),
        available,
    })
}

/// The strategy a run was made with: its snapshot (`RUN/strategy.toml`, written when the run started), so a
/// resumed, replayed or debugged run means what it meant then even when the file it named has changed or gone.
/// Runs made before snapshots existed load the strategy run.json names, from `dir` as [`load_strategy`] does.
pub fn load_run_strategy(run: &RunDir, dir: Option<&Path>) -> Result<Strategy, PipelineError> {
    let snapshot = run.strategy_toml();
    if snapshot.is_file() {
        let text = std::fs::read_to_string(&snapshot)
            .map_err(|e| PipelineError::io("reading strategy", &snapshot, e))?;
        return parse_strategy(&text, &snapshot.display().to_string());
    }
    load_strategy(&run.read_meta()?.strategy, dir)
}

/// Snapshots `strategy` into `run` (`strategy.toml`) and records in run.json the hashes of the prompt templates
/// the run uses; a run that has its snapshot keeps it (a resumed run is the run it was).
pub fn snapshot_strategy(
    run: &RunDir,
    strategy: &Strategy,
    prompts: &crate::prompt::PromptLibrary,
) -> Result<(), PipelineError> {
    let snapshot = run.strategy_toml();
    if snapshot.is_file() {
        return Ok(());
    }
    kt_record::layout::write_file(&snapshot, strategy.text.as_bytes())?;
    let mut meta = run.read_meta()?;
    meta.prompt_hashes = prompts
        .names()
        .filter_map(|n| {
            let t = prompts.template(n).ok()?;
            Some((n.to_string(), t.template_hash.clone()))
        })
        .collect();
    run.write_meta(&meta)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_strategy_parses_and_names_its_kind() {
        for (name, text) in BUILTIN_STRATEGIES {
            let s = parse_strategy(text, name).unwrap();
            assert_eq!(&s.name, name);
            assert_eq!(s.kind.to_string(), *name);
        }
    }

    #[test]
    fn explicit_strategy_lists_the_design_steps_in_dependency_order() {
        let s = load_strategy("explicit", None).unwrap();
        let ids: Vec<&str> = s.steps.iter().map(|s| s.id.as_str()).collect();
        for needed in [
            "block_size",
            "elements_per_thread",
            "work_per_thread",
            "strides",
            "shared_memory",
            "prefetching",
            "tiling",
            "loop_unrolling",
            "ilp",
        ] {
            assert!(ids.contains(&needed), "missing {needed} in {ids:?}");
        }
        for (i, step) in s.steps.iter().enumerate() {
            for d in &step.depends_on {
                let j = ids.iter().position(|x| x == d).unwrap();
                assert!(j < i, "{} runs before its dependency {d}", step.id);
            }
        }
        assert!(
            !s.steps[0].ask_if_worth_it,
            "block size is applied without asking"
        );
    }

    #[test]
    fn a_new_explicit_step_is_just_a_toml_entry() {
        let text = r#"
            name = "mine"
            kind = "explicit"
            [[steps]]
            id = "vectorize"
            title = "float4 loads"
            template = "my-vectorize"
            parameters = [{ name = "vector_width", values = [1, 2, 4] }]
        "#;
        let s = parse_strategy(text, "test").unwrap();
        assert_eq!(s.steps[0].parameters[0].values, vec![1, 2, 4]);
        assert!(s.steps[0].ask_if_worth_it);
    }

    #[test]
    fn overrides_change_replans_breakdown_and_candidates() {
        let s = load_strategy("autonomous", None).unwrap();
        let s2 = s
            .clone()
            .with_overrides(&crate::strategy::StrategyOverrides {
                replan: Some(1),
                breakdown: Some(0),
                candidates: Some(0),
            });
        assert_eq!(s2.settings.max_replans, 1);
        assert_eq!(s2.breakdown_limit(), 0);
        assert_eq!(s2.settings.candidates, 1);
        let s3 = s.with_overrides(&crate::strategy::StrategyOverrides {
            breakdown: Some(2),
            ..Default::default()
        });
        assert_eq!(s3.breakdown_limit(), 2);
    }

    #[test]
    fn unknown_strategy_and_misspelt_settings_are_clear_errors() {
        let err = load_strategy("greedy", None).unwrap_err().to_string();
        assert!(
            err.contains("greedy") && err.contains("autonomous"),
            "{err}"
        );
        let err = parse_strategy(
            "name='x'\nkind='autonomous'\n[settings]\nmax_replan = 2\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("max_replan"), "{err}");
    }
}
