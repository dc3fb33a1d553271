//! The demo cassette `experiments/cassettes/matmul-autonomous.jsonl`: recorded from the scripted demo answers
//! through the same code path as `kt transform` (Stages 1 and 2 for real, Stage 3 with the fake GPU), once
//! for every combination of the three applied steps being accepted or rejected, so that a replay on any GPU
//! finds its answers whichever steps that GPU keeps. `replays_stage_3_for_every_acceptance_outcome` fails
//! when a prompt changed since the recording: re-record with
//! `cargo test -p kt-pipeline --lib record_demo_cassette -- --ignored`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kt_graph::{CancelToken, MemoryStore, RunId};
use kt_llm::{LlmClient, LlmConfig, Recorder, StructuredMode, read_records};

use super::*;
use crate::PromptLibrary;
use crate::prepare::{KernelInput, Stage1Source, TestgenSettings, understand};
use crate::stage3::*;
use crate::strategy::{StrategyOverrides, load_strategy};
use kt_record::{NewRun, RunDir, RunLlm, RunSettings, RunStatus};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
fn script() -> PathBuf {
    root().join("experiments/cassettes/matmul-autonomous.toml")
}
fn cassette() -> PathBuf {
    root().join("experiments/cassettes/matmul-autonomous.jsonl")
}
fn kernel_file() -> PathBuf {
    root().join("naive-kernels/matmul.cu")
}

/// The LLM client exactly as `--llm <spec>` builds it.
fn client(spec: &str, record: &Path) -> LlmClient {
    LlmConfig::parse_spec(spec)
        .unwrap()
        .build_client()
        .unwrap()
        .with_recorder(Recorder::open(record).unwrap())
}

/// Fake GPU times for one combination: step i is accepted when bit i is set (it halves the best time), else
/// it is exactly as fast as the best kernel (rejected).
fn branch_times(mask: u32) -> Vec<f64> {
    let mut best = 25.0;
    (0..3)
        .map(|i| {
            if mask & (1 << i) != 0 {
                best /= 2.0;
            }
            best
        })
        .collect()
}

fn stage3_settings(llm: LlmClient, prompts: Arc<PromptLibrary>, times: Vec<f64>) -> Stage3Settings {
    let strategy = load_strategy("autonomous", Some(&root().join("strategies")))
        .unwrap()
        .with_overrides(&StrategyOverrides {
            replan: Some(3),
            ..Default::default()
        });
    Stage3Settings {
        strategy,
        llm: Arc::new(llm),
        prompts,
        mode: StructuredMode::Native,
        backend: Arc::new(move |_: &BackendInputs<'_>| -> Arc<dyn TuningBackend> {
            Arc::new(FakeBackend::with_times(25.0, &times))
        }),
        progress: Arc::new(NoProgress),
        events: None,
        cancel: CancelToken::new(),
    }
}

fn new_run(base: &Path) -> RunDir {
    RunDir::create(
        base,
        NewRun {
            kernel_file: &kernel_file(),
            kernel: "matrixMultiply",
            strategy: "autonomous",
            settings: RunSettings {
                replan: Some(3),
                breakdown: Some(1),
                candidates: Some(1),
                tests: Some(3),
                seed: None,
                ..RunSettings::default()
            },
            llm: RunLlm {
                provider: "scripted".into(),
                model: "scripted".into(),
                ..RunLlm::default()
            },
        },
    )
    .unwrap()
}

/// A run directory that has Stage 1's result and an (empty) tests directory: enough for Stage 3 on the fake GPU.
fn stage3_only_run(base: &Path, info: &crate::KernelInfo) -> RunDir {
    let run = new_run(base);
    info.save(&run).unwrap();
    std::fs::create_dir_all(run.tests_dir()).unwrap();
    run
}

fn statuses(outcome: &TransformOutcome) -> Vec<StepStatus> {
    outcome
        .state
        .as_ref()
        .unwrap()
        .history
        .iter()
        .map(|r| r.status)
        .collect()
}

fn expected_statuses(mask: u32) -> Vec<StepStatus> {
    let mut v: Vec<StepStatus> = (0..3)
        .map(|i| {
            if mask & (1 << i) != 0 {
                StepStatus::Accepted
            } else {
                StepStatus::Rejected
            }
        })
        .collect();
    v.push(StepStatus::Invalid);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes experiments/cassettes/matmul-autonomous.jsonl (needs python3 + numpy); run after changing a prompt or the demo script"]
async fn record_demo_cassette() {
    let tmp = tempfile::tempdir().unwrap();
    let prompts = Arc::new(PromptLibrary::locate(Some(&root().join("prompts"))).unwrap());
    let spec = format!("scripted:{}", script().display());

    // Branch "all accepted": the whole pipeline, as `kt transform` runs it.
    let run = new_run(&tmp.path().join("runs"));
    let llm = client(&spec, &run.llm_jsonl());
    let source = KernelInput::read(&kernel_file(), None).unwrap();
    let stage1 = Stage1Source::Llm {
        llm: llm.clone(),
        prompts: prompts.clone(),
        mode: StructuredMode::Native,
        attempts: crate::stage1::DEFAULT_ATTEMPTS,
    };
    let testgen = TestgenSettings {
        llm: Some(llm.clone()),
        prompts: prompts.clone(),
        script: None,
        options: crate::stage2::Stage2Options {
            tests: 3,
            ..Default::default()
        },
        sandbox: kt_sandbox::Sandbox::new(kt_sandbox::Policy::for_generator()),
        python: kt_sandbox::PythonRuntime::find_or_provision().unwrap(),
        reference: Arc::new(crate::stage2::Unavailable {
            reason: "recording on a machine without a GPU".into(),
        }),
        // The recording covers Stage 2's answers too: its tests are made here.
        gpu_missing: None,
    };
    let all = 0b111;
    let outcome = transform(
        &run,
        &source,
        stage1,
        testgen,
        stage3_settings(llm, prompts.clone(), branch_times(all)),
    )
    .await
    .unwrap();
    assert_eq!(statuses(&outcome), expected_statuses(all));
    let info = crate::KernelInfo::load(&run).unwrap();
    let mut logs = vec![run.llm_jsonl()];

    // Every other branch: Stage 3 again from the same Stage 1 result.
    for mask in 0..all {
        let branch = stage3_only_run(&tmp.path().join(format!("branch-{mask}")), &info);
        let llm = client(&spec, &branch.llm_jsonl());
        let outcome = resume(
            &branch,
            stage3_settings(llm, prompts.clone(), branch_times(mask)),
        )
        .await
        .unwrap();
        assert_eq!(
            statuses(&outcome),
            expected_statuses(mask),
            "branch {mask:03b}"
        );
        logs.push(branch.llm_jsonl());
    }

    // One cassette, each distinct (request, answer) once, in recording order.
    let mut seen = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for log in logs {
        for r in read_records(&log).unwrap() {
            if seen.insert((r.request_hash.clone(), r.answer.clone())) {
                lines.push(serde_json::to_string(&r).unwrap());
            }
        }
    }
    std::fs::write(cassette(), lines.join("\n") + "\n").unwrap();
    assert_eq!(
        RunDir::open(run.root())
            .unwrap()
            .read_meta()
            .unwrap()
            .status,
        RunStatus::Finished
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replays_stage_3_for_every_acceptance_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let prompts = Arc::new(PromptLibrary::locate(Some(&root().join("prompts"))).unwrap());
    let spec = format!("replay:{}", cassette().display());
    // Stage 1 from the cassette (it needs no GPU and no python).
    let source = KernelInput::read(&kernel_file(), None).unwrap();
    let stage1 = Stage1Source::Llm {
        llm: client(&spec, &tmp.path().join("stage1.jsonl")),
        prompts: prompts.clone(),
        mode: StructuredMode::Native,
        attempts: crate::stage1::DEFAULT_ATTEMPTS,
    };
    let understood = understand(
        &source,
        stage1,
        Arc::new(MemoryStore::new()),
        RunId::new("replay/stage1"),
    )
    .await
    .expect("Stage 1 replays from the cassette; if not, re-record it (see this file's doc)");
    let info = understood.stage1.info;
    for mask in 0..8 {
        let run = stage3_only_run(&tmp.path().join(format!("b{mask}")), &info);
        let llm = client(&spec, &run.llm_jsonl());
        let outcome = resume(&run, stage3_settings(llm, prompts.clone(), branch_times(mask)))
            .await
            .unwrap_or_else(|e| panic!("branch {mask:03b} does not replay: {e}; re-record the cassette (see this file's doc)"));
        assert_eq!(
            statuses(&outcome),
            expected_statuses(mask),
            "branch {mask:03b}"
        );
    }
}
