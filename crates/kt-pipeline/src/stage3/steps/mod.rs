//! The LLM step loop: the graph of a strategy (`graph`, its nodes in `nodes/`), the questions asked and the
//! variables their prompts see (`ask`, `prompt_vars`), a rewrite read and checked before any GPU work
//! (`rewrite_answer`, `rewrite_check`), what a failed candidate tells the LLM (`feedback`) and whether a
//! candidate is faster beyond the noise (`speedup_interval`). GPU work goes through `super::backend`.

pub(super) mod ask;
pub(crate) mod feedback;
pub(super) mod graph;
pub(super) mod nodes;
pub(super) mod prompt_vars;
pub(super) mod rewrite_answer;
pub(super) mod rewrite_check;
pub(super) mod speedup_interval;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod graph_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod outcome_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod strategy_tests;
