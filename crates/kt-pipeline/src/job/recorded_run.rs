//! A recorded run for tests of the crates that read runs (kt-runs, the `kt` binary's end-to-end tests) and of
//! Stage 3 itself: kt's autonomous Stage 3 on the matmul kernel, with scripted LLM answers and the fake tuning
//! backend, in a real run directory (run.json, run.sqlite, llm.jsonl, kernels/, result.json) — exactly what
//! `kt transform` leaves, minus Stages 1 and 2. Also its parts: the matmul's [`KernelInfo`], scripted rewrites
//! and answer scripts.
//!
//! Compiled only for this crate's tests and with the `test-support` feature (other crates' dev-dependencies).
//! A fixture that cannot build its run is a failed test, hence the unwraps.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kt_graph::CancelToken;
use kt_llm::{LlmClient, Recorder, ScriptedProvider, StructuredMode};
use serde_json::json;

use super::Stage3Settings;
use crate::stage3::{FakeBackend, NoProgress, TuningBackend};
use crate::strategy::{StrategyOverrides, load_strategy};
use crate::{KernelInfo, NewRun, ProblemDimension, PromptLibrary, RunDir, RunLlm, RunSettings};

/// The naive matmul every fixture here is about.
pub const MATMUL: &str = include_str!("../../../../naive-kernels/matmul.cu");

/// The workspace root, where `prompts/`, `strategies/` and `naive-kernels/` are.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What Stage 1 learns about the matmul.
pub fn matmul_info() -> KernelInfo {
    KernelInfo {
        name: "matrixMultiply".into(),
        parameters: ["A", "B", "C", "A_width", "A_height", "B_width"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        description: "C = A * B for row-major float matrices".into(),
        problem_size: vec![
            ProblemDimension {
                expression: "B_width".into(),
            },
            ProblemDimension {
                expression: "A_height".into(),
            },
        ],
        outputs: vec!["C".into()],
        inputs_and_outputs: vec![],
        default_block: [16, 16, 1],
    }
}

/// A scripted `stage3.apply` answer: the matmul, rewritten so that [`FakeBackend`]'s outcome is `marker`,
/// with the block sizes as its tunable parameters.
pub fn matmul_rewrite(marker: &str) -> String {
    matmul_rewrite_with(
        marker,
        &[("block_size_x", &[16, 32]), ("block_size_y", &[4, 8])],
    )
}

/// Like [`matmul_rewrite`], with the given tunable parameters and their values.
pub fn matmul_rewrite_with(marker: &str, params: &[(&str, &[i64])]) -> String {
    let code = format!("{MATMUL}\n// fake-tuning: {marker}\n");
    let parameters: Vec<_> = params
        .iter()
        .map(|(n, v)| json!({"name": n, "values": v}))
        .collect();
    json!({"code": code, "parameters": parameters, "explanation": marker}).to_string()
}

/// The answers of the recorded run: plan two steps, both accepted (20 ms -> 10 ms -> 4 ms); the replan ends
/// the run.
pub fn recorded_run_answers() -> Vec<(&'static str, String)> {
    vec![
        (
            "stage3.plan",
            json!({"steps": ["tunable block size", "register tiling"]}).to_string(),
        ),
        (
            "stage3.validate",
            json!({"valid": true, "reason": "device code only"}).to_string(),
        ),
        ("stage3.apply", matmul_rewrite("ok 10.0")),
        (
            "stage3.restrictions",
            json!({"restrictions": ["block_size_x * block_size_y <= 1024"]}).to_string(),
        ),
        (
            "stage3.validate",
            json!({"valid": true, "reason": "device code only"}).to_string(),
        ),
        ("stage3.apply", matmul_rewrite("ok 4.0")),
        (
            "stage3.restrictions",
            json!({"restrictions": []}).to_string(),
        ),
        ("stage3.replan", json!({"steps": []}).to_string()),
    ]
}

/// Writes a script for kt-llm's scripted provider: `(node, answer text)` pairs, answered in order.
pub fn write_script(path: &Path, answers: &[(&str, String)]) {
    let list: Vec<_> = answers
        .iter()
        .map(|(node, text)| json!({"node": node, "text": text}))
        .collect();
    std::fs::write(path, json!({ "answers": list }).to_string()).unwrap();
}

/// The fixture's fake GPU: the original takes 20 ms; every profile is kt-profile's real ncu capture of the
/// naive matmul on an H100, and the device has an H100's peaks (so the report draws a roofline).
pub fn fixture_backend() -> FakeBackend {
    let profile = kt_profile::KernelProfile::parse(include_str!(
        "../../../kt-profile/tests/fixtures/captured-matmul-naive-h100.csv"
    ))
    .unwrap();
    let peaks = kt_profile::DevicePeaks {
        bandwidth_gb_s: 3352.0,
        fp32_gflop_s: 66908.0,
    };
    FakeBackend::new(20.0)
        .with_profile(profile)
        .with_roofline(peaks, 683.0, 1900.0)
}

/// Records the run in a new run directory under `runs_dir` (its answer script is left beside it as
/// `answers.json`) and returns the run's directory.
pub async fn record_matmul_run(runs_dir: &Path) -> RunDir {
    record_matmul_run_with(
        runs_dir,
        Arc::new(|_| Arc::new(fixture_backend()) as Arc<dyn TuningBackend>),
    )
    .await
}

/// [`record_matmul_run`] on another tuning backend (a slowed-down one, for tests that watch a run live).
pub async fn record_matmul_run_with(runs_dir: &Path, backend: super::BackendFactory) -> RunDir {
    let root = repo_root();
    let kernel_file = root.join("naive-kernels/matmul.cu");
    let run = RunDir::create(
        runs_dir,
        NewRun {
            kernel_file: &kernel_file,
            kernel: "matrixMultiply",
            strategy: "autonomous",
            settings: RunSettings {
                replan: Some(1),
                breakdown: Some(0),
                candidates: None,
                tests: Some(1),
                seed: None,
                ..RunSettings::default()
            },
            llm: RunLlm {
                provider: "scripted".into(),
                model: String::new(),
                ..RunLlm::default()
            },
        },
    )
    .unwrap();
    matmul_info().save(&run).unwrap();
    std::fs::create_dir_all(run.tests_dir()).unwrap();
    let script = runs_dir.join("answers.json");
    write_script(&script, &recorded_run_answers());
    let client = LlmClient::new(ScriptedProvider::load(&script).unwrap())
        .with_parse_retries(0)
        .with_recorder(Recorder::open(run.llm_jsonl()).unwrap());
    let overrides = StrategyOverrides {
        replan: Some(1),
        breakdown: Some(0),
        candidates: None,
    };
    let settings = Stage3Settings {
        strategy: load_strategy("autonomous", Some(&root.join("strategies")))
            .unwrap()
            .with_overrides(&overrides),
        llm: Arc::new(client),
        prompts: Arc::new(PromptLibrary::from_dir(&root.join("prompts")).unwrap()),
        mode: StructuredMode::Native,
        backend,
        progress: Arc::new(NoProgress),
        events: None,
        cancel: CancelToken::new(),
    };
    super::resume(&run, settings).await.unwrap();
    run
}
