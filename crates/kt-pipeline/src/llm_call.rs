//! One LLM call as a run records it (result files, the failed attempts an error carries along).

use serde::{Deserialize, Serialize};

/// One LLM call, for the run record: which prompt (by hash), how many tokens, what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmCallRecord {
    pub node: String,
    pub template: String,
    pub template_hash: String,
    pub prompt_hash: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: Option<f64>,
    pub seconds: f64,
}
