use super::*;
use serde_json::json;

fn summary(status: &str) -> RunSummary {
    let mut s = crate::catalog::summarize(std::path::Path::new("/nonexistent/r1"));
    s.status = serde_json::from_value(json!(status)).ok();
    s
}

/// result.json as its readers see it.
fn result(v: serde_json::Value) -> RunResult {
    RunResult::from_value(&v)
}

#[test]
fn a_run_stopped_for_a_gpu_names_the_resume_command() {
    let r = result(json!({"needs_gpu": true, "error": "no driver"}));
    let st = run_state(&summary("interrupted"), Some(&r), Some("tune")).unwrap();
    assert_eq!(st.headline, "No result yet: the run needs a CUDA GPU.");
    assert!(
        st.detail
            .contains("On a machine with an NVIDIA GPU, continue with `kt resume r1`"),
        "{}",
        st.detail
    );
    assert!(
        st.detail.contains("no driver") && st.detail.contains("`tune`"),
        "{}",
        st.detail
    );
    assert_eq!(st.command.as_deref(), Some("kt resume r1"));
}

#[test]
fn a_failed_run_says_its_error_and_node_and_a_waiting_one_its_prompt_id() {
    let r = result(json!({"error": "problem_size refused three times", "kernel_file": "k.cu"}));
    let st = run_state(&summary("failed"), Some(&r), Some("stage1.dimensions")).unwrap();
    assert_eq!(st.headline, "The run failed at node `stage1.dimensions`.");
    assert!(
        st.detail.contains("problem_size refused three times"),
        "{}",
        st.detail
    );
    assert_eq!(st.command.as_deref(), Some("kt transform k.cu"));
    let w = result(
        json!({"waiting_for": {"node": "stage1.describe", "prompt_file": "/p/001-stage1.describe.prompt.md",
        "answer_file": "/p/001-stage1.describe.answer.md"}}),
    );
    let st = run_state(&summary("interrupted"), Some(&w), None).unwrap();
    assert!(
        st.headline.contains("prompt 001-stage1.describe"),
        "{}",
        st.headline
    );
    assert_eq!(
        st.command.as_deref(),
        Some("kt resume r1 --answer FILE --answer-for 001-stage1.describe")
    );
    assert_eq!(run_state(&summary("finished"), None, None), None);
    assert!(
        run_state(&summary("running"), None, Some("plan"))
            .unwrap()
            .headline
            .contains("`plan` now")
    );
}
