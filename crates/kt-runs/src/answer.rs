//! Answering the prompt a `manual:` run waits for: `kt resume RUN --answer FILE` and kt studio's answer box
//! both put the answer where the paused run's manual provider looks for it, then continue the run.

use kt_pipeline::RunDir;
use kt_record::RunResult;

use crate::error::RunsError;

pub use kt_record::WaitingAnswer;

/// The prompt the run waits for an answer to (result.json's `waiting_for`), or None when it waits for none.
pub fn waiting_prompt(dir: &RunDir) -> Result<Option<WaitingAnswer>, RunsError> {
    let path = dir.result_json();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RunsError::io("reading", &path, e)),
    };
    let result: RunResult = serde_json::from_str(&text).map_err(|e| RunsError::BadJson {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    Ok(result.waiting_for)
}

/// Writes `answer` to the waiting prompt's answer file; the run continues with `kt resume`. Refused when the
/// run waits for no answer (its answer would be read by nothing).
pub fn answer_waiting_prompt(dir: &RunDir, answer: &str) -> Result<WaitingAnswer, RunsError> {
    let Some(waiting) = waiting_prompt(dir)? else {
        return Err(RunsError::Usage(format!(
            "run {} is not waiting for an answer (its result.json has no `waiting_for`); resume it without an answer",
            dir.root().display()
        )));
    };
    std::fs::write(&waiting.answer_file, answer)
        .map_err(|e| RunsError::io("writing the answer to", &waiting.answer_file, e))?;
    Ok(waiting)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kt_pipeline::job::recorded_run::record_matmul_run;

    #[tokio::test]
    async fn a_finished_run_waits_for_no_answer_and_refuses_one() {
        let home = tempfile::tempdir().unwrap();
        let run = record_matmul_run(home.path()).await;
        assert_eq!(waiting_prompt(&run).unwrap(), None);
        let err = answer_waiting_prompt(&run, "{}").unwrap_err().to_string();
        assert!(err.contains("not waiting for an answer"), "{err}");
    }

    #[tokio::test]
    async fn an_answer_goes_to_the_file_the_manual_provider_reads() {
        let home = tempfile::tempdir().unwrap();
        let run = record_matmul_run(home.path()).await;
        let text = std::fs::read_to_string(run.result_json()).unwrap();
        let mut result: serde_json::Value = serde_json::from_str(&text).unwrap();
        let answer_file = home.path().join("answer.md");
        result["waiting_for"] = serde_json::json!({
            "node": "stage3.apply",
            "prompt_file": home.path().join("prompt.md"),
            "answer_file": answer_file,
        });
        std::fs::write(run.result_json(), result.to_string()).unwrap();
        let waiting = answer_waiting_prompt(&run, "the answer").unwrap();
        assert_eq!(waiting.node, "stage3.apply");
        assert_eq!(std::fs::read_to_string(answer_file).unwrap(), "the answer");
    }
}
