//! How a run without a final result stands, in the words the command line uses: what happened (still running,
//! stopped for a GPU or a manual answer, interrupted, the LLM service down, failed, and where) and the command
//! that continues it. The HTML report and kt studio both say it from here.

use kt_record::{RunResult, RunStatus};
use serde::Serialize;

use crate::catalog::RunSummary;

/// What happened to a run, and what to do next. Commands are written between backticks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunState {
    /// One sentence: `No result yet: the run needs a CUDA GPU.`
    pub headline: String,
    /// Why, and what to do.
    pub detail: String,
    /// The command that continues the run (or starts it again), when there is one.
    pub command: Option<String>,
}

/// The state of the run `s` with result.json `result`; `at` names the node it stopped or failed at, when
/// known. `None` for a finished run.
pub fn run_state(s: &RunSummary, result: Option<&RunResult>, at: Option<&str>) -> Option<RunState> {
    let error = result
        .and_then(|r| r.error.as_deref())
        .map(|e| format!(" ({e})"))
        .unwrap_or_default();
    let at_node = at.map(|n| format!(" at node `{n}`")).unwrap_or_default();
    let resume = format!("kt resume {}", s.id);
    let state = |headline: String, detail: String, command: Option<String>| {
        Some(RunState {
            headline,
            detail,
            command,
        })
    };
    match s.status {
        Some(RunStatus::Finished) => None,
        Some(RunStatus::Running) => state(
            format!(
                "Still running{}.",
                at.map(|n| format!(": `{n}` now")).unwrap_or_default()
            ),
            format!(
                "If no kt process works on it any more (it was killed), `{resume}` continues it from its last checkpoint."
            ),
            None,
        ),
        Some(RunStatus::Interrupted) if s.needs_gpu || result.is_some_and(|r| r.needs_gpu) => {
            state(
                "No result yet: the run needs a CUDA GPU.".into(),
                format!(
                    "It stopped{at_node} where a GPU is needed{error}; stages up to this point are saved. On a machine \
                 with an NVIDIA GPU, continue with `{resume}` (it uses the LLM the run recorded)."
                ),
                Some(resume),
            )
        }
        Some(RunStatus::Interrupted) => match result.and_then(|r| r.waiting_for.as_ref()) {
            Some(w) => {
                let command = format!("{resume} --answer FILE --answer-for {}", w.id());
                state(
                    format!(
                        "No result yet: the run waits for an answer to `{}` (prompt {}).",
                        w.node,
                        w.id()
                    ),
                    format!(
                        "Read the prompt {}, write the answer to a file, then continue with `{command}`.",
                        w.prompt_file.display()
                    ),
                    Some(command),
                )
            }
            None => state(
                "No result yet: the run was stopped.".into(),
                format!(
                    "It stopped{at_node}{error}; `{resume}` continues it from its last checkpoint."
                ),
                Some(resume),
            ),
        },
        Some(RunStatus::LlmUnavailable) => state(
            "No result yet: the LLM service failed.".into(),
            format!(
                "The service did not answer{at_node}{error}; once it does, `{resume}` continues the run."
            ),
            Some(resume),
        ),
        Some(RunStatus::Failed) => {
            let file = result
                .map(|r| r.kernel_file.as_str())
                .filter(|f| !f.is_empty());
            let again = format!("kt transform {}", file.unwrap_or("FILE"));
            state(
                format!("The run failed{at_node}."),
                format!(
                    "It ended with an error{}. What it did up to there is kept; fix the cause and start a new run \
                     with `{again}`.",
                    if error.is_empty() {
                        " (result.json gives none)".to_string()
                    } else {
                        error.clone()
                    }
                ),
                Some(again),
            )
        }
        Some(RunStatus::Unknown) | None => state(
            "The run's record is incomplete.".into(),
            format!(
                "Its status is `{}`{}.",
                s.status_text(),
                s.problem
                    .as_deref()
                    .map(|p| format!(": {p}"))
                    .unwrap_or_default()
            ),
            None,
        ),
    }
}

#[cfg(test)]
#[path = "run_state_tests.rs"]
mod tests;
