//! How a run without a final result stands, in the words the command line uses: what happened (still running,
//! stopped for a GPU or a manual answer, interrupted, the LLM service down, failed, and where) and the command
//! that continues it. The HTML report and kt studio both say it from here.

use serde::Serialize;
use serde_json::Value;

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
pub fn run_state(s: &RunSummary, result: Option<&Value>, at: Option<&str>) -> Option<RunState> {
    let text = |k: &str| result.and_then(|v| v.get(k)).and_then(Value::as_str);
    let error = text("error").map(|e| format!(" ({e})")).unwrap_or_default();
    let at_node = at.map(|n| format!(" at node `{n}`")).unwrap_or_default();
    let resume = format!("kt resume {}", s.id);
    let state = |headline: String, detail: String, command: Option<String>| {
        Some(RunState {
            headline,
            detail,
            command,
        })
    };
    match s.status.as_str() {
        "finished" => None,
        "running" => state(
            format!(
                "Still running{}.",
                at.map(|n| format!(": `{n}` now")).unwrap_or_default()
            ),
            format!(
                "If no kt process works on it any more (it was killed), `{resume}` continues it from its last checkpoint."
            ),
            None,
        ),
        "interrupted"
            if s.needs_gpu
                || result.and_then(|v| v.get("needs_gpu")) == Some(&Value::Bool(true)) =>
        {
            state(
                "No result yet: the run needs a CUDA GPU.".into(),
                format!(
                    "It stopped{at_node} where a GPU is needed{error}; stages up to this point are saved. On a machine \
                 with an NVIDIA GPU, continue with `{resume}` (it uses the LLM the run recorded)."
                ),
                Some(resume),
            )
        }
        "interrupted" => match result
            .and_then(|v| v.get("waiting_for"))
            .and_then(|w| serde_json::from_value::<kt_record::WaitingAnswer>(w.clone()).ok())
        {
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
        "llm_unavailable" => state(
            "No result yet: the LLM service failed.".into(),
            format!(
                "The service did not answer{at_node}{error}; once it does, `{resume}` continues the run."
            ),
            Some(resume),
        ),
        "failed" => {
            let again = format!("kt transform {}", text("kernel_file").unwrap_or("FILE"));
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
        other => state(
            "The run's record is incomplete.".into(),
            format!(
                "Its status is `{other}`{}.",
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
