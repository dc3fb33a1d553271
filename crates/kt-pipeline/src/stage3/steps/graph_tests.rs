//! Every path of the three strategy graphs, on the CPU: scripted LLM answers (kt-llm's scripted provider, with
//! the run's `llm.jsonl` record read back to check what each prompt contained) and the fake tuning backend.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kt_graph::{Executor, MemoryStore, RunId, RunOptions};
use kt_llm::{LlmClient, Recorder, ScriptedProvider, read_records};
use serde_json::json;

// `rewrite(marker)`: a rewrite of the matmul whose fake tuning outcome is `marker` (see `FakeBackend`).
use crate::PromptLibrary;
use crate::job::recorded_run::{
    MATMUL, matmul_info as info, matmul_rewrite as rewrite, matmul_rewrite_with as rewrite_with,
    write_script,
};
use crate::stage3::*;
use crate::strategy::{StrategyOverrides, load_strategy};

pub(in crate::stage3) fn plan(steps: &[&str]) -> String {
    json!({ "steps": steps }).to_string()
}
pub(in crate::stage3) fn valid(v: bool) -> String {
    json!({"valid": v, "reason": if v { "device code only" } else { "uses cuBLAS, a library" }})
        .to_string()
}
pub(in crate::stage3) fn no_breakdown() -> String {
    json!({"substeps": []}).to_string()
}
pub(in crate::stage3) fn restrictions(list: &[&str]) -> String {
    json!({ "restrictions": list }).to_string()
}
pub(in crate::stage3) fn worth(v: bool) -> String {
    json!({"worth_it": v, "reason": if v { "helps" } else { "already done" }}).to_string()
}

pub(in crate::stage3) struct Harness {
    _dir: tempfile::TempDir,
    pub(in crate::stage3) run_dir: PathBuf,
    pub(in crate::stage3) llm_log: PathBuf,
    pub(in crate::stage3) backend: Arc<FakeBackend>,
    pub(in crate::stage3) cx: Arc<Stage3Context>,
}

pub(in crate::stage3) fn harness_with(
    strategy: &str,
    overrides: StrategyOverrides,
    answers: &[(&str, String)],
    backend: FakeBackend,
) -> Harness {
    harness_for(strategy, overrides, answers, backend, MATMUL, info())
}

/// A harness around any kernel `source` with its Stage 1 facts `kernel_info`.
pub(in crate::stage3) fn harness_for(
    strategy: &str,
    overrides: StrategyOverrides,
    answers: &[(&str, String)],
    backend: FakeBackend,
    source: &str,
    kernel_info: crate::KernelInfo,
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("answers.json");
    write_script(&script, answers);
    let llm_log = dir.path().join("llm.jsonl");
    let client = LlmClient::new(ScriptedProvider::load(&script).unwrap())
        .with_parse_retries(0)
        .with_recorder(Recorder::open(&llm_log).unwrap());
    let strategy = load_strategy(
        strategy,
        Some(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../strategies"
        ))),
    )
    .unwrap()
    .with_overrides(&overrides);
    let prompts = PromptLibrary::from_dir(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../prompts"
    )))
    .unwrap();
    let signature = kt_cuda::parse(source).unwrap().kernels[0].clone();
    let facts = KernelFacts {
        info: kernel_info,
        signature,
        source: source.into(),
    };
    let backend = Arc::new(backend);
    let run_dir = dir.path().join("run");
    let cx = Stage3Context::new(strategy, facts, Arc::new(prompts))
        .with_llm(Arc::new(client))
        .with_backend(backend.clone())
        .with_run_dir(&run_dir);
    Harness {
        _dir: dir,
        run_dir,
        llm_log,
        backend,
        cx: Arc::new(cx),
    }
}

pub(in crate::stage3) fn harness(strategy: &str, answers: &[(&str, String)]) -> Harness {
    let overrides = StrategyOverrides {
        replan: Some(0),
        breakdown: Some(0),
        candidates: None,
    };
    harness_with(strategy, overrides, answers, FakeBackend::new(20.0))
}

pub(in crate::stage3) async fn run(h: &Harness) -> Result<Stage3State, crate::PipelineError> {
    let graph = build_graph(h.cx.clone())?;
    let exec = Executor::new(graph, Arc::new(MemoryStore::new()));
    let original = TunableCode::original(&h.cx.kernel.source, &h.cx.kernel.info);
    let opts = RunOptions {
        step_limit: 500,
        ..RunOptions::default()
    };
    let outcome = exec
        .start(RunId::new("test"), Stage3State::new(original), opts)
        .await
        .map_err(|e| crate::PipelineError::Graph {
            stage: "stage 3",
            message: e.to_string(),
        })?;
    assert!(outcome.is_finished(), "run did not finish");
    Ok(outcome.into_state())
}

/// The user message of every recorded call to `node`, in call order.
pub(in crate::stage3) fn prompts_of(h: &Harness, node: &str) -> Vec<String> {
    read_records(&h.llm_log)
        .unwrap()
        .into_iter()
        .filter(|r| r.node == node)
        .map(|r| {
            r.messages
                .iter()
                .filter(|m| m.role == kt_llm::Role::User)
                .map(|m| m.content.clone())
                .collect()
        })
        .collect()
}

pub(in crate::stage3) fn statuses(s: &Stage3State) -> Vec<(String, StepStatus)> {
    s.history
        .iter()
        .map(|r| (r.step.clone(), r.status))
        .collect()
}

pub(in crate::stage3) fn best_time(s: &Stage3State) -> f64 {
    s.best.as_ref().unwrap().time_ms
}

#[tokio::test]
async fn autonomous_applies_the_plan_then_replans_until_the_planner_has_nothing_left() {
    let h = harness_with(
        "autonomous",
        StrategyOverrides {
            replan: Some(3),
            breakdown: Some(0),
            candidates: None,
        },
        &[
            (
                "stage3.plan",
                plan(&["tunable block size", "register tiling"]),
            ),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 10.0")),
            (
                "stage3.restrictions",
                restrictions(&["block_size_x * block_size_y <= 1024"]),
            ),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 4.0")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.replan", plan(&["unroll the k loop"])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 3.98")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.replan", plan(&[])),
        ],
        FakeBackend::new(20.0),
    );
    let s = run(&h).await.unwrap();
    assert_eq!(
        statuses(&s),
        vec![
            ("tunable block size".to_string(), StepStatus::Accepted),
            ("register tiling".to_string(), StepStatus::Accepted),
            ("unroll the k loop".to_string(), StepStatus::Rejected),
        ]
    );
    assert_eq!(best_time(&s), 4.0);
    assert_eq!(
        s.replans_used, 2,
        "one replan with a step, one that ended the run"
    );
    assert!(s.finished);
    // Candidates land in kernels/, numbered after the original.
    assert!(h.run_dir.join("kernels/000-original.cu").is_file());
    assert!(h.run_dir.join("kernels/002-register-tiling.cu").is_file());
    // Every call is a fresh conversation: system + one user message.
    for r in read_records(&h.llm_log).unwrap() {
        assert_eq!(
            r.messages.len(),
            2,
            "{} sent {} messages",
            r.node,
            r.messages.len()
        );
    }
    // Tokens of every call are in the record.
    assert_eq!(s.llm_calls.len(), read_records(&h.llm_log).unwrap().len());
}

#[tokio::test]
async fn invalid_step_is_recorded_and_never_applied() {
    let h = harness(
        "autonomous",
        &[
            (
                "stage3.plan",
                plan(&["call cublasSgemm instead", "tunable block size"]),
            ),
            ("stage3.validate", valid(false)),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 10.0")),
            ("stage3.restrictions", restrictions(&[])),
        ],
    );
    let s = run(&h).await.unwrap();
    assert_eq!(
        statuses(&s)[0],
        ("call cublasSgemm instead".to_string(), StepStatus::Invalid)
    );
    assert_eq!(prompts_of(&h, "stage3.apply").len(), 1);
    assert!(prompts_of(&h, "stage3.apply")[0].contains("tunable block size"));
}

#[tokio::test]
async fn breakdown_puts_substeps_first_and_does_not_break_them_down_again() {
    let h = harness_with(
        "autonomous",
        StrategyOverrides {
            replan: Some(0),
            breakdown: Some(1),
            candidates: None,
        },
        &[
            ("stage3.plan", plan(&["tile everything", "unroll"])),
            ("stage3.validate", valid(true)),
            (
                "stage3.breakdown",
                json!({"substeps": ["tile in shared memory", "tile in registers"]}).to_string(),
            ),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 10.0")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 5.0")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.validate", valid(true)),
            ("stage3.breakdown", no_breakdown()),
            ("stage3.apply", rewrite("ok 4.0")),
            ("stage3.restrictions", restrictions(&[])),
        ],
        FakeBackend::new(20.0),
    );
    let s = run(&h).await.unwrap();
    let order: Vec<String> = s.history.iter().map(|r| r.step.clone()).collect();
    assert_eq!(
        order,
        [
            "tile everything",
            "tile in shared memory",
            "tile in registers",
            "unroll"
        ]
    );
    assert_eq!(s.history[0].status, StepStatus::BrokenDown);
    // Sub-steps at depth 1 reach the limit: only the two plan steps were offered for breakdown.
    assert_eq!(prompts_of(&h, "stage3.breakdown").len(), 2);
    assert_eq!(best_time(&s), 4.0);
}

#[tokio::test]
async fn compile_error_goes_back_to_the_llm_with_the_log_and_the_retry_is_used() {
    let h = harness(
        "autonomous",
        &[
            ("stage3.plan", plan(&["tunable block size"])),
            ("stage3.validate", valid(true)),
            (
                "stage3.apply",
                rewrite("compile-error identifier \"TILE\" is undefined"),
            ),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("ok 10.0")),
            ("stage3.restrictions", restrictions(&[])),
        ],
    );
    let s = run(&h).await.unwrap();
    assert_eq!(
        statuses(&s),
        vec![("tunable block size".to_string(), StepStatus::Accepted)]
    );
    let applies = prompts_of(&h, "stage3.apply");
    assert_eq!(applies.len(), 2);
    assert!(!applies[0].contains("refused"));
    assert!(
        applies[1].contains("did not compile") && applies[1].contains("\"TILE\" is undefined"),
        "{}",
        applies[1]
    );
    let winner = s
        .candidates
        .iter()
        .find(|c| c.verified_time().is_some())
        .unwrap();
    assert_eq!(winner.attempts, 2);
    assert_eq!(winner.feedback.len(), 1);
    // The failed attempt's calls are accounted for too.
    assert_eq!(s.llm_calls.len(), read_records(&h.llm_log).unwrap().len());
}

#[tokio::test]
async fn wrong_answer_is_reported_as_a_wrong_answer_with_test_output_and_mismatches() {
    let h = harness(
        "autonomous",
        &[
            ("stage3.plan", plan(&["tunable block size"])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("wrong-answer")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("ok 10.0")),
            ("stage3.restrictions", restrictions(&[])),
        ],
    );
    run(&h).await.unwrap();
    let retry = &prompts_of(&h, "stage3.apply")[1];
    assert!(
        retry.contains("computed wrong results")
            && retry.contains("test t1")
            && retry.contains("`C`"),
        "{retry}"
    );
    assert!(retry.contains("index 4097: expected 1.25"), "{retry}");
    assert!(!retry.contains("did not compile"), "{retry}");
}

#[tokio::test]
async fn a_step_that_keeps_failing_is_dropped_and_the_run_goes_on() {
    let h = harness(
        "autonomous",
        &[
            ("stage3.plan", plan(&["broken idea", "tunable block size"])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("timeout")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("crash")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("wrong-answer")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 10.0")),
            ("stage3.restrictions", restrictions(&[])),
        ],
    );
    let s = run(&h).await.unwrap();
    assert_eq!(s.history[0].status, StepStatus::Dropped);
    assert!(
        s.history[0].reason.contains("3 attempt(s)")
            && s.history[0].reason.contains("wrong answer")
    );
    assert_eq!(s.history[1].status, StepStatus::Accepted);
    let applies = prompts_of(&h, "stage3.apply");
    assert!(
        applies[1].contains("did not finish") && applies[1].contains("hangs"),
        "timeout is said so"
    );
    assert!(applies[2].contains("crashed"));
}

#[tokio::test]
async fn the_result_is_never_an_unverified_or_slower_kernel() {
    let h = harness(
        "autonomous",
        &[
            ("stage3.plan", plan(&["wrong", "slower", "within noise"])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("wrong-answer")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("wrong-answer")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("wrong-answer")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 25.0")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 19.9 noise 0.5")),
            ("stage3.restrictions", restrictions(&[])),
        ],
    );
    let s = run(&h).await.unwrap();
    let best = s.best.as_ref().unwrap();
    assert_eq!(best.step, "original");
    assert_eq!(best.time_ms, 20.0);
    assert_eq!(
        s.history.iter().map(|r| r.status).collect::<Vec<_>>(),
        [
            StepStatus::Dropped,
            StepStatus::Rejected,
            StepStatus::Rejected
        ]
    );
}

#[tokio::test]
async fn three_planner_failures_end_the_run_with_the_original_kernel() {
    let h = harness(
        "autonomous",
        &[
            ("stage3.plan", "I would tile it.".to_string()),
            ("stage3.plan", "{\"step\": 1}".to_string()),
            ("stage3.plan", "```json\nnope\n```".to_string()),
        ],
    );
    let s = run(&h).await.unwrap();
    assert_eq!(s.planner_failures, 3);
    assert!(s.finished);
    assert_eq!(s.best.as_ref().unwrap().step, "original");
    assert!(h.backend.evaluated().is_empty());
}

#[tokio::test]
async fn replanning_stops_at_the_replan_limit() {
    let mut answers = vec![("stage3.plan", plan(&["step 0"]))];
    for i in 0..3 {
        answers.push(("stage3.validate", valid(true)));
        answers.push(("stage3.apply", rewrite(&format!("ok {}", 10.0 - i as f64))));
        answers.push(("stage3.restrictions", restrictions(&[])));
        answers.push(("stage3.replan", plan(&["another step"])));
    }
    let h = harness_with(
        "autonomous",
        StrategyOverrides {
            replan: Some(2),
            breakdown: Some(0),
            candidates: None,
        },
        &answers,
        FakeBackend::new(20.0),
    );
    let s = run(&h).await.unwrap();
    assert_eq!(s.replans_used, 2);
    assert_eq!(prompts_of(&h, "stage3.replan").len(), 2);
    assert_eq!(s.history.len(), 3);
}

#[tokio::test]
async fn replanning_sees_the_current_best_kernel_and_the_failed_step() {
    let h = harness_with(
        "autonomous",
        StrategyOverrides {
            replan: Some(1),
            breakdown: Some(0),
            candidates: None,
        },
        &[
            ("stage3.plan", plan(&["good step", "doomed step"])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 10.0 accepted-marker")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("compile-error x")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("compile-error y")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("compile-error z")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.replan", plan(&[])),
        ],
        FakeBackend::new(20.0),
    );
    run(&h).await.unwrap();
    let replan = &prompts_of(&h, "stage3.replan")[0];
    assert!(
        replan.contains("accepted-marker"),
        "the replanner sees the best kernel:\n{replan}"
    );
    assert!(
        replan.contains("doomed step — dropped"),
        "and the failed last step:\n{replan}"
    );
    assert!(replan.contains("good step — accepted"));
    assert!(
        !replan.contains("did not compile"),
        "no earlier conversation is carried over"
    );
}

#[tokio::test]
async fn restrictions_are_asked_with_the_new_code_and_checked() {
    let h = harness(
        "autonomous",
        &[
            ("stage3.plan", plan(&["tiles"])),
            ("stage3.validate", valid(true)),
            (
                "stage3.apply",
                rewrite_with(
                    "ok 10.0 new-code-marker",
                    &[("block_size_x", &[16, 32]), ("B_width", &[1])],
                ),
            ),
            ("stage3.names", json!({"renames": []}).to_string()),
            ("stage3.apply", rewrite("ok 10.0 new-code-marker")),
            ("stage3.restrictions", restrictions(&["TILE <= 4"])),
            ("stage3.restrictions", restrictions(&["block_size_x <= 32"])),
        ],
    );
    let s = run(&h).await.unwrap();
    let asked = prompts_of(&h, "stage3.restrictions");
    // The first rewrite named a kernel argument as a parameter: refused before restrictions were asked for.
    let first_apply_retry = &prompts_of(&h, "stage3.apply")[1];
    assert!(first_apply_retry.contains("B_width"), "{first_apply_retry}");
    assert_eq!(asked.len(), 2);
    assert!(
        asked[0].contains("new-code-marker"),
        "restrictions are asked with the new code"
    );
    assert!(!asked[0].contains("refused"));
    assert!(asked[1].contains("`TILE`"), "{}", asked[1]);
    let kernel = s.best.as_ref().unwrap();
    assert_eq!(
        kernel.kernel.restrictions,
        vec!["block_size_x <= 32".to_string()]
    );
    assert_eq!(
        h.backend.evaluated().len(),
        1,
        "only checked kernels reach the GPU"
    );
}

#[tokio::test]
async fn changed_signature_is_refused_and_explained() {
    let bad = json!({"code": MATMUL.replace("int B_width", "long B_width"), "parameters": []})
        .to_string();
    let h = harness(
        "autonomous",
        &[
            ("stage3.plan", plan(&["x"])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", bad),
            ("stage3.apply", rewrite("ok 10.0")),
            ("stage3.restrictions", restrictions(&[])),
        ],
    );
    run(&h).await.unwrap();
    let retry = &prompts_of(&h, "stage3.apply")[1];
    assert!(
        retry.contains("signature") && retry.contains("B_width"),
        "{retry}"
    );
}

#[tokio::test]
async fn best_of_n_keeps_the_fastest_verified_candidate() {
    let h = harness_with(
        "autonomous",
        StrategyOverrides {
            replan: Some(0),
            breakdown: Some(0),
            candidates: Some(3),
        },
        &[
            ("stage3.plan", plan(&["tiles"])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 8.0")),
            ("stage3.apply", rewrite("ok 6.0")),
            ("stage3.apply", rewrite("wrong-answer")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.apply", rewrite("ok 7.0")),
            ("stage3.restrictions", restrictions(&[])),
        ],
        FakeBackend::new(20.0),
    );
    let s = run(&h).await.unwrap();
    assert_eq!(s.round_candidates().count(), 3);
    assert_eq!(best_time(&s), 6.0);
    assert_eq!(s.history.len(), 1);
    assert_eq!(s.kernels_written, 4, "original + three candidates");
}

#[tokio::test]
async fn without_a_gpu_the_run_stops_at_the_baseline_with_a_clear_message() {
    let h = harness_with(
        "autonomous",
        StrategyOverrides::default(),
        &[("stage3.plan", plan(&["x"]))],
        FakeBackend::without_gpu(),
    );
    let err = run(&h).await.unwrap_err().to_string();
    assert!(err.contains("CUDA GPU is needed"), "{err}");
    assert!(
        prompts_of(&h, "stage3.plan").is_empty(),
        "nothing after the GPU was needed ran"
    );
}

#[tokio::test]
async fn without_an_llm_the_first_llm_node_says_how_to_configure_one() {
    let h = harness("autonomous", &[]);
    let mut cx = Stage3Context::new(
        h.cx.strategy.clone(),
        h.cx.kernel.clone(),
        h.cx.prompts.clone(),
    )
    .with_backend(h.backend.clone());
    cx.run_dir = None;
    let graph = build_graph(Arc::new(cx)).unwrap();
    let exec = Executor::new(graph, Arc::new(MemoryStore::new()));
    let err = exec
        .start(
            RunId::new("t"),
            Stage3State::new(TunableCode::original(MATMUL, &info())),
            RunOptions::default(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--llm PROVIDER:MODEL") && err.contains("kt.toml"),
        "{err}"
    );
}
