//! Steering a run from the page — each the same operation as its command line, recorded the same way:
//! fork (`kt fork --at N --set FIELD=VALUE`), breakpoints (`kt debug break`), replay (`kt replay --from N`),
//! resume (`kt resume`), and answering a waiting `manual:` prompt (`kt resume --answer`).
//!
//! Fork, breakpoints and replay call kt-runs, as the commands do. Resume (and the resume after an answer)
//! runs the `kt resume` command itself as a child process: it needs the LLM configuration and its API key
//! (kt.toml, the environment), which stay in that process and never enter the studio's; and a long run goes
//! on in its own process, watched through its store like a run started in a terminal.

use std::path::Path;

use kt_runs::{
    Breakpoints, ContinueReport, FieldSet, ForkReport, LlmChoice, RunRecord, Setup, Stage3Binding,
    WaitingAnswer, session_dir,
};
use serde::Deserialize;

use crate::error::StudioError;
use crate::jobs::Jobs;

/// `POST /api/runs/{id}/fork`.
#[derive(Debug, Deserialize)]
pub struct ForkRequest {
    /// The checkpoint to copy (`7`, `#7`, `input`, `head`, `latest`).
    pub at: String,
    /// Edited fields, as `kt fork --set FIELD=VALUE` reads them (VALUE: JSON when it parses, else text).
    pub sets: Vec<FieldEdit>,
}

#[derive(Debug, Deserialize)]
pub struct FieldEdit {
    pub field: String,
    pub value: String,
}

/// Copies a checkpoint to a new branch with the edited fields (nothing runs; resume continues from it).
pub fn fork(record: &RunRecord, request: &ForkRequest) -> Result<ForkReport, StudioError> {
    if request.sets.is_empty() {
        return Err(StudioError::BadRequest(
            "nothing to change: edit at least one field".into(),
        ));
    }
    let at = record.resolve(&request.at)?;
    let sets = request
        .sets
        .iter()
        .map(|s| FieldSet::parse(&format!("{}={}", s.field, s.value)))
        .collect::<Result<Vec<_>, _>>()?;
    let setup = Setup::new(LlmChoice::Replay, session_dir(record, "fork"));
    Ok(kt_runs::fork(
        &Stage3Binding::default(),
        record,
        &setup,
        at,
        &sets,
    )?)
}

/// `POST /api/runs/{id}/breakpoints`: replaces the run's breakpoints.
pub fn set_breakpoints(
    record: &RunRecord,
    wanted: Breakpoints,
) -> Result<Breakpoints, StudioError> {
    let known = kt_runs::breakpoint_nodes(record)?;
    Ok(kt_runs::set_breakpoints(record, wanted, &known)?)
}

/// Replays from `from` with recorded LLM answers and tuning results, on a new branch; blocks until done.
pub fn replay(
    record: &RunRecord,
    from: &str,
    step_limit: u64,
) -> Result<ContinueReport, StudioError> {
    let from = record.resolve(from)?;
    let setup = Setup::new(LlmChoice::Replay, session_dir(record, "replay"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StudioError::Task(format!("starting the replay's runtime: {e}")))?;
    Ok(rt.block_on(kt_runs::replay(
        &Stage3Binding::default(),
        record,
        &setup,
        from,
        step_limit,
    ))?)
}

/// Writes the answer to prompt `id` where the waiting `manual:` prompt's provider reads it; refused when the
/// run no longer waits for `id` (the page showed an older question) or it is answered already.
pub fn answer(record: &RunRecord, id: &str, text: &str) -> Result<WaitingAnswer, StudioError> {
    Ok(kt_runs::answer_waiting_prompt(
        record.dir(),
        text,
        Some(id),
    )?)
}

/// What `kt resume` started from the page would call for the LLM calls not made yet, in the words the
/// command prints (it runs in the studio's directory with its environment, without --llm); or why it could
/// not start.
pub fn resume_llm(record: &RunRecord) -> String {
    let meta = match record.dir().read_meta() {
        Ok(m) => m,
        Err(e) => return format!("kt resume could not read the run: {e}"),
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    // the page's resume passes no --trust-run: a run that is not provably this user's is refused there too
    let consent = kt_pipeline::run_llm::Consent::for_run(&meta, false);
    match kt_pipeline::run_llm::llm_for_run(&meta.llm, &cwd, None, &consent) {
        Ok((config, origin)) => origin
            .notice(&config.describe())
            .unwrap_or_else(|| format!("LLM: {} (from $KT_LLM)", config.describe())),
        Err(e) => format!("kt resume would stop before its first call: {e}"),
    }
}

/// Starts `kt resume RUN_DIR` in the background; its end is recorded in `jobs`.
pub fn spawn_resume(
    kt: &Path,
    run_dir: &Path,
    run: &str,
    kind: &str,
    jobs: &Jobs,
) -> Result<usize, StudioError> {
    let command = format!("{} resume {}", kt.display(), run_dir.display());
    let child = tokio::process::Command::new(kt)
        .arg("resume")
        .arg(run_dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(false)
        .spawn()
        .map_err(|source| StudioError::Spawn { command, source })?;
    let id = jobs.start(run, kind);
    let jobs = jobs.clone();
    tokio::spawn(async move {
        match child.wait_with_output().await {
            Ok(out) => {
                let text = String::from_utf8_lossy(&out.stderr).to_string()
                    + &String::from_utf8_lossy(&out.stdout);
                let tail: Vec<&str> = text.lines().rev().take(6).collect();
                let message = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
                let code = out.status.code();
                // Exit 3: stopped again, waiting for the next manual answer — an expected pause.
                jobs.finish(id, out.status.success() || code == Some(3), message);
            }
            Err(e) => jobs.finish(id, false, format!("waiting for kt resume: {e}")),
        }
    });
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kt_pipeline::job::recorded_run::record_matmul_run;

    #[tokio::test]
    async fn a_fork_with_an_edited_field_opens_a_branch_in_the_store() {
        let home = tempfile::tempdir().unwrap();
        let run = record_matmul_run(home.path()).await;
        let record = RunRecord::open(run).unwrap();
        let before = record.checkpoints().unwrap().len();
        let report = fork(
            &record,
            &ForkRequest {
                at: "input".into(),
                sets: vec![FieldEdit {
                    field: "plan".into(),
                    value: "[]".into(),
                }],
            },
        )
        .unwrap();
        assert!(report.branch > 0);
        assert_eq!(record.checkpoints().unwrap().len(), before + 1);
        assert_eq!(
            kt_runs::state_at(
                &record,
                kt_runs::CheckpointId(report.checkpoint),
                Some("plan")
            )
            .unwrap(),
            serde_json::json!([])
        );
        let nothing = ForkRequest {
            at: "input".into(),
            sets: vec![],
        };
        assert!(fork(&record, &nothing).is_err());
    }

    #[tokio::test]
    async fn breakpoints_must_name_nodes_of_the_graph() {
        let home = tempfile::tempdir().unwrap();
        let record = RunRecord::open(record_matmul_run(home.path()).await).unwrap();
        let bp = Breakpoints {
            before: vec!["apply".into()],
            after: vec![],
        };
        assert_eq!(set_breakpoints(&record, bp.clone()).unwrap(), bp);
        assert_eq!(record.meta().unwrap().breakpoints, bp);
        let wrong = Breakpoints {
            before: vec!["no_such_node".into()],
            after: vec![],
        };
        assert!(set_breakpoints(&record, wrong).is_err());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_replay_from_the_input_opens_a_branch_that_finishes() {
        let home = tempfile::tempdir().unwrap();
        let record = RunRecord::open(record_matmul_run(home.path()).await).unwrap();
        let r2 = record.clone();
        let report = tokio::task::spawn_blocking(move || replay(&r2, "input", 10_000))
            .await
            .unwrap()
            .unwrap();
        assert!(report.branch > 0);
        assert!(report.stopped.is_none(), "{report:?}");
    }
}
