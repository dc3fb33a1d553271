//! Answering a waiting prompt (kt-run-view's `answer`) on runs recorded by kt-pipeline's fixture: here, on the
//! side that depends on the pipeline.

use std::path::Path;

use kt_pipeline::job::recorded_run::record_matmul_run;
use kt_record::RunDir;
use kt_run_view::RunsError;
use kt_run_view::answer::*;

/// Makes `run` wait for prompt `NNN-node` of a prompt directory under `home`, as the manual provider does.
fn wait_for(run: &RunDir, home: &Path, id: &str, node: &str) -> WaitingAnswer {
    // inside the run: an answer is written only there or in the run's recorded `manual:` directory
    let _ = home;
    let prompts = run.root().join("manual");
    std::fs::create_dir_all(&prompts).unwrap();
    let waiting = WaitingAnswer {
        node: node.into(),
        prompt_file: prompts.join(format!("{id}.prompt.md")),
        answer_file: prompts.join(format!("{id}.answer.md")),
    };
    std::fs::write(
        &waiting.prompt_file,
        format!("{PROMPT_MARK}abc -->\n# Prompt for node `{node}`\n\nHow many dimensions?"),
    )
    .unwrap();
    let text = std::fs::read_to_string(run.result_json()).unwrap();
    let mut result: serde_json::Value = serde_json::from_str(&text).unwrap();
    result["waiting_for"] = serde_json::to_value(&waiting).unwrap();
    std::fs::write(run.result_json(), result.to_string()).unwrap();
    waiting
}

#[tokio::test]
async fn a_finished_run_waits_for_no_answer_and_refuses_one() {
    let home = tempfile::tempdir().unwrap();
    let run = record_matmul_run(home.path()).await;
    assert_eq!(waiting_prompt(&run).unwrap(), None);
    let err = answer_waiting_prompt(&run, "{}", None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not waiting for an answer"), "{err}");
}

#[tokio::test]
async fn an_answer_goes_to_the_file_the_manual_provider_reads_and_the_page_reads_the_question() {
    let home = tempfile::tempdir().unwrap();
    let run = record_matmul_run(home.path()).await;
    let waiting = wait_for(&run, home.path(), "001-stage3.apply", "stage3.apply");
    let shown = WaitingPrompt::read(&waiting);
    assert_eq!(shown.id, "001-stage3.apply");
    assert_eq!(
        shown.text.as_deref(),
        Some("# Prompt for node `stage3.apply`\n\nHow many dimensions?")
    );
    assert!(!shown.answered);
    let given = answer_waiting_prompt(&run, "the answer", Some("001-stage3.apply")).unwrap();
    assert_eq!(given.node, "stage3.apply");
    assert_eq!(
        std::fs::read_to_string(&waiting.answer_file).unwrap(),
        "the answer"
    );
    assert!(WaitingPrompt::read(&waiting).answered);
    // pressed again before the resume took it: refused, the first answer stays
    let again = answer_waiting_prompt(&run, "another", Some("001-stage3.apply")).unwrap_err();
    assert!(matches!(again, RunsError::StaleAnswer(_)), "{again}");
    assert!(
        again.to_string().contains("already has an answer"),
        "{again}"
    );
    assert_eq!(
        std::fs::read_to_string(&waiting.answer_file).unwrap(),
        "the answer"
    );
}

#[tokio::test]
async fn an_answer_for_a_prompt_no_longer_waiting_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let run = record_matmul_run(home.path()).await;
    let first = wait_for(&run, home.path(), "001-stage1.describe", "stage1.describe");
    answer_waiting_prompt(&run, "{\"describe\": 1}", Some("001-stage1.describe")).unwrap();
    let next = wait_for(
        &run,
        home.path(),
        "002-stage1.dimensions",
        "stage1.dimensions",
    );
    let stale = answer_waiting_prompt(&run, "x", Some("001-stage1.describe")).unwrap_err();
    let text = stale.to_string();
    assert!(
        text.contains("now waits for `002-stage1.dimensions`") && text.contains("--answer-for"),
        "{text}"
    );
    // the CLI without an id: the describe answer given again is caught
    let repeated = answer_waiting_prompt(&run, "{\"describe\": 1}\n", None).unwrap_err();
    assert!(
        repeated.to_string().contains("001-stage1.describe"),
        "{repeated}"
    );
    assert!(!next.answer_file.exists());
    assert!(
        answer_waiting_prompt(&run, "  ", None).is_err(),
        "an empty answer"
    );
    answer_waiting_prompt(&run, "{\"rank\": 2}", None).unwrap();
    assert_eq!(
        std::fs::read_to_string(&next.answer_file).unwrap(),
        "{\"rank\": 2}"
    );
    assert!(first.answer_file.exists());
}

#[tokio::test]
async fn a_record_pointing_at_a_file_kt_did_not_write_shows_no_text() {
    let home = tempfile::tempdir().unwrap();
    let run = record_matmul_run(home.path()).await;
    let mut waiting = wait_for(&run, home.path(), "001-x", "x");
    let secret = home.path().join("secret");
    std::fs::write(&secret, "not a prompt\nkey").unwrap();
    waiting.prompt_file = secret;
    assert_eq!(WaitingPrompt::read(&waiting).text, None);
}

#[tokio::test]
async fn a_planted_answer_path_outside_the_run_or_through_a_link_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let run = record_matmul_run(home.path()).await;
    wait_for(&run, home.path(), "001-stage3.apply", "stage3.apply");
    let text = std::fs::read_to_string(run.result_json()).unwrap();
    let mut result: serde_json::Value = serde_json::from_str(&text).unwrap();
    let victim = home.path().join("victim.answer.md");
    std::fs::write(&victim, "mine").unwrap();
    let bashrc = run.root().join("manual/.bashrc");
    let link = run.root().join("manual/002-x.answer.md");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for (target, why) in [
        (&victim, "outside the run directory"),
        (&bashrc, "not a manual provider's answer file"),
        (&link, "writing the answer"),
    ] {
        result["waiting_for"]["answer_file"] = serde_json::json!(target);
        std::fs::write(run.result_json(), result.to_string()).unwrap();
        let err = answer_waiting_prompt(&run, "pwned", Some("001-stage3.apply"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    assert!(!bashrc.exists());
}
