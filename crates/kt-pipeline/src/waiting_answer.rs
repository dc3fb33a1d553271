//! A question the `manual` provider asked and that has no answer yet: where a paused run waits.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A question the `manual` provider wrote and that has no answer yet: the run is paused at it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingAnswer {
    /// The LLM call's node label (`stage1.describe`, `stage3.apply`, ...).
    pub node: String,
    /// The prompt to answer.
    pub prompt_file: PathBuf,
    /// Where the answer goes (`kt resume RUN --answer FILE` copies FILE there).
    pub answer_file: PathBuf,
}
