//! A realistic recorded run for tests: kt's autonomous Stage 3 on the matmul kernel, with scripted LLM answers
//! and the fake tuning backend, in a real run directory (run.json, run.sqlite, llm.jsonl, kernels/,
//! result.json) — exactly what `kt transform` leaves, minus Stages 1 and 2.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kt_graph::CancelToken;
use kt_llm::{LlmClient, Recorder, ScriptedProvider, StructuredMode};
use kt_pipeline::stage3::{FakeBackend, NoProgress, Stage3Settings, TuningBackend};
use kt_pipeline::strategy::{StrategyOverrides, load_strategy};
use kt_pipeline::{
    KernelInfo, NewRun, ProblemDimension, PromptLibrary, RunDir, RunLlm, RunSettings,
};
use serde_json::json;

use crate::stage3::Stage3Binding;

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn binding() -> Stage3Binding {
    Stage3Binding {
        prompts_dir: Some(repo().join("prompts")),
        strategies_dir: Some(repo().join("strategies")),
    }
}

fn info() -> KernelInfo {
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

/// A scripted rewrite of the matmul whose fake tuning outcome is `marker`.
pub(crate) fn rewrite(marker: &str) -> String {
    let source = std::fs::read_to_string(repo().join("naive-kernels/matmul.cu")).unwrap();
    let code = format!("{source}\n// fake-tuning: {marker}\n");
    json!({"code": code, "parameters": [{"name": "block_size_x", "values": [16, 32]}, {"name": "block_size_y", "values": [4, 8]}], "explanation": marker}).to_string()
}

/// The answers of the recorded run: plan two steps, both accepted; the replan ends the run.
pub(crate) fn answers() -> Vec<(&'static str, String)> {
    vec![
        (
            "stage3.plan",
            json!({"steps": ["tunable block size", "register tiling"]}).to_string(),
        ),
        (
            "stage3.validate",
            json!({"valid": true, "reason": "device code only"}).to_string(),
        ),
        ("stage3.apply", rewrite("ok 10.0")),
        (
            "stage3.restrictions",
            json!({"restrictions": ["block_size_x * block_size_y <= 1024"]}).to_string(),
        ),
        (
            "stage3.validate",
            json!({"valid": true, "reason": "device code only"}).to_string(),
        ),
        ("stage3.apply", rewrite("ok 4.0")),
        (
            "stage3.restrictions",
            json!({"restrictions": []}).to_string(),
        ),
        ("stage3.replan", json!({"steps": []}).to_string()),
    ]
}

pub(crate) fn write_script(path: &Path, answers: &[(&str, String)]) {
    let list: Vec<_> = answers
        .iter()
        .map(|(node, text)| json!({"node": node, "text": text}))
        .collect();
    std::fs::write(path, json!({ "answers": list }).to_string()).unwrap();
}

/// Records the run under `base` and returns its directory.
pub(crate) async fn record_run(base: &Path) -> RunDir {
    let kernel_file = repo().join("naive-kernels/matmul.cu");
    let run = RunDir::create(
        base,
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
            },
            llm: RunLlm {
                provider: "scripted".into(),
                model: String::new(),
            },
        },
    )
    .unwrap();
    run.save_kernel_info(&info()).unwrap();
    std::fs::create_dir_all(run.tests_dir()).unwrap();
    let script = base.join("answers.json");
    write_script(&script, &answers());
    let client = LlmClient::new(ScriptedProvider::load(&script).unwrap())
        .with_parse_retries(0)
        .with_recorder(Recorder::open(run.llm_jsonl()).unwrap());
    let overrides = StrategyOverrides {
        replan: Some(1),
        breakdown: Some(0),
        candidates: None,
    };
    let settings = Stage3Settings {
        strategy: load_strategy("autonomous", Some(&repo().join("strategies")))
            .unwrap()
            .with_overrides(&overrides),
        llm: Arc::new(client),
        prompts: Arc::new(PromptLibrary::from_dir(&repo().join("prompts")).unwrap()),
        mode: StructuredMode::Native,
        backend: Arc::new(|_| Arc::new(FakeBackend::new(20.0)) as Arc<dyn TuningBackend>),
        progress: Arc::new(NoProgress),
        events: None,
        cancel: CancelToken::new(),
    };
    kt_pipeline::stage3::resume(&run, settings).await.unwrap();
    run
}
