//! Strategies as data: `strategies/<name>.toml` says which kind of Stage 3 graph to build (one-prompt, explicit,
//! autonomous), its settings (candidates, attempts, acceptance threshold, replans, breakdown) and which prompt
//! template each LLM call uses. The explicit strategy's steps and their dependencies live here too, so that
//! adding a step is a TOML entry and a template, not a Rust change.

mod config;
mod explicit;
mod load;

pub use config::{
    ProfilePrompt, Strategy, StrategyKind, StrategyOverrides, StrategyPrompts, StrategySettings,
};
pub use explicit::{ExplicitStep, StepParameter};
pub use load::{
    BUILTIN_STRATEGIES, find_strategies_dir, load_run_strategy, load_strategy, parse_strategy,
    snapshot_strategy,
};
