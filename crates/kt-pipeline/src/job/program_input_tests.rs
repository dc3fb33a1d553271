//! A whole program as `kt transform`'s input, through Stage 3 on the fake GPU: every stage works on the
//! kernel's unit, the user's file is unchanged, and the best kernel comes back both as `best.cu` (the unit) and
//! inside a copy of the program (`best_program.cu`). Also the run record's GPU, sandbox and failed
//! configurations, written by `write_result` from what a backend reports.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use kt_graph::CancelToken;
use kt_llm::{LlmClient, ScriptedProvider, StructuredMode};

use super::recorded_run::{MATMUL, matmul_info, recorded_run_answers, repo_root, write_script};
use super::*;
use crate::gpu_record::GpuRecord;
use crate::prepare::{KernelInput, save_unit};
use crate::stage3::*;
use crate::strategy::{StrategyOverrides, load_strategy};
use crate::{NewRun, PromptLibrary, RunDir, RunLlm, RunSettings};
use kt_record::RunStatus;

fn program() -> String {
    format!(
        "#include <stdio.h>\n#include <cuda_runtime.h>\n\n{MATMUL}\nint main(void) {{\n    float *A, *B, *C;\n    \
         cudaMalloc(&A, 1024); cudaMalloc(&B, 1024); cudaMalloc(&C, 1024);\n    \
         matrixMultiply<<<dim3(1, 1), dim3(16, 16)>>>(A, B, C, 16, 16, 16);\n    printf(\"done\\n\");\n    \
         return 0;\n}}\n"
    )
}

fn settings(script: &std::path::Path, backend: Arc<FakeBackend>) -> Stage3Settings {
    let root = repo_root();
    Stage3Settings {
        strategy: load_strategy("autonomous", Some(&root.join("strategies")))
            .unwrap()
            .with_overrides(&StrategyOverrides {
                replan: Some(1),
                breakdown: Some(0),
                candidates: None,
            }),
        llm: Arc::new(
            LlmClient::new(ScriptedProvider::load(script).unwrap()).with_parse_retries(0),
        ),
        prompts: Arc::new(PromptLibrary::from_dir(&root.join("prompts")).unwrap()),
        mode: StructuredMode::Native,
        backend: Arc::new(move |_: &BackendInputs<'_>| backend.clone() as Arc<dyn TuningBackend>),
        progress: Arc::new(NoProgress),
        events: None,
        cancel: CancelToken::new(),
    }
}

#[tokio::test]
async fn a_whole_program_is_tuned_as_its_kernels_unit_and_delivered_back_into_a_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("matmul_program.cu");
    std::fs::write(&file, program()).unwrap();
    let source = KernelInput::read(&file, None).unwrap();
    assert!(source.program.is_some());
    let run = RunDir::create(
        &tmp.path().join("runs"),
        NewRun {
            kernel_file: &file,
            kernel: "matrixMultiply",
            strategy: "autonomous",
            settings: RunSettings {
                replan: Some(1),
                breakdown: Some(0),
                include_dirs: source.include_dirs_for_record(),
                ..RunSettings::default()
            },
            llm: RunLlm::default(),
        },
    )
    .unwrap();
    // What prepare() leaves for Stage 3 (Stages 1-2 need an LLM and python).
    save_unit(&run, &source).unwrap();
    matmul_info().save(&run).unwrap();
    std::fs::create_dir_all(run.tests_dir()).unwrap();
    let script = tmp.path().join("answers.json");
    // The recorded run's rewrites, their fake-GPU marker inside the kernel's body (a rewrite of the kernel).
    let answers: Vec<(&str, String)> = recorded_run_answers()
        .into_iter()
        .map(|(node, text)| {
            if node != "stage3.apply" {
                return (node, text);
            }
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let marker = v["explanation"].as_str().unwrap().to_string();
            v["code"] = MATMUL
                .replacen("{\n", &format!("{{\n    // fake-tuning: {marker}\n"), 1)
                .into();
            (node, v.to_string())
        })
        .collect();
    write_script(&script, &answers);
    let backend = Arc::new(FakeBackend::new(20.0));
    let outcome = resume(&run, settings(&script, backend.clone()))
        .await
        .unwrap();
    assert_eq!(outcome.result.status, RunStatus::Finished);

    // The GPU saw the unit: no host code, ever.
    let seen = backend.evaluated();
    assert!(!seen.is_empty());
    for (_, k) in &seen {
        assert!(
            !k.code.contains("main(") && !k.code.contains("cudaMalloc"),
            "{}",
            k.code
        );
    }
    let best = std::fs::read_to_string(run.best_cu()).unwrap();
    assert!(
        !best.contains("int main") && best.contains("__global__"),
        "{best}"
    );
    // The program with the best kernel: its host code as written, the tuned values defined.
    assert_eq!(
        outcome.result.best_program.as_deref(),
        Some("best_program.cu")
    );
    let whole = std::fs::read_to_string(run.results(0).best_program_cu()).unwrap();
    assert!(
        whole.contains("int main(void)")
            && whole.contains("printf(\"done\\n\")")
            && whole.contains("fake-tuning: ok 4.0")
            && whole.contains("#define block_size_x"),
        "{whole}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        program(),
        "the user's file is unchanged"
    );
    let report = std::fs::read_to_string(run.report_md()).unwrap();
    assert!(report.contains("best_program.cu"), "{report}");
}

/// A backend that only reports a GPU and tuning records (the record-writing under test needs nothing else).
struct Reporting;

#[async_trait]
impl TuningBackend for Reporting {
    async fn reference(&self, _: &TunableCode) -> Result<Reference, BackendError> {
        Err(BackendError::Failed {
            detail: "unused".into(),
        })
    }
    async fn evaluate(
        &self,
        _: &str,
        _: &TunableCode,
        _: &dyn TuningProgress,
    ) -> Result<Outcome, BackendError> {
        Err(BackendError::Failed {
            detail: "unused".into(),
        })
    }
    async fn time_pair(
        &self,
        _: (&TunableCode, &BTreeMap<String, i64>),
        _: (&TunableCode, &BTreeMap<String, i64>),
        _: u32,
    ) -> Result<PairTimes, BackendError> {
        Err(BackendError::Failed {
            detail: "unused".into(),
        })
    }
    fn configurations(&self, _: &TunableCode) -> Option<ConfigRecord> {
        Some(ConfigRecord {
            verified_values: [("block_size_x".to_string(), vec![64])].into(),
            failed: vec![FailedConfiguration {
                config: vec![("block_size_x".into(), 128)],
                verdict: "wrong answer".into(),
                detail: "test t0: output C: 12 of 4096 elements wrong".into(),
            }],
        })
    }
    fn gpu(&self) -> Option<GpuRecord> {
        Some(GpuRecord {
            name: "NVIDIA H200".into(),
            pci_bus_id: "00000000:1B:00.0".into(),
            uuid: "GPU-1".into(),
            compute_capability: "9.0".into(),
            driver_version: "12.8".into(),
            ordinal: 0,
            cuda_visible_devices: Some("1".into()),
        })
    }
}

#[test]
fn the_record_names_the_gpu_the_sandbox_and_the_failed_configurations() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("matmul.cu");
    std::fs::write(&file, MATMUL).unwrap();
    let run = RunDir::create(
        &tmp.path().join("runs"),
        NewRun {
            kernel_file: &file,
            kernel: "matrixMultiply",
            strategy: "autonomous",
            settings: RunSettings {
                allow_unsandboxed: true,
                ..RunSettings::default()
            },
            llm: RunLlm::default(),
        },
    )
    .unwrap();
    let protections = kt_sandbox::Protections {
        network_namespace: false,
        ..kt_sandbox::Protections::default()
    };
    run.record_sandbox(protections).unwrap();
    let kernel = TunableCode {
        code: MATMUL.into(),
        parameters: vec![TunableParameter {
            name: "block_size_x".into(),
            values: vec![64, 128],
        }],
        restrictions: vec![],
        grid_divisors: default_grid_divisors(),
        dynamic_shared_memory: None,
        seeds: Vec::new(),
    };
    let state = Stage3State {
        best: Some(KernelVersion {
            kernel,
            time_ms: 2.0,
            noise_ms: 0.0,
            best_params: [("block_size_x".to_string(), 64)].into(),
            step: "tile".into(),
            file: None,
            percent_of_peak: None,
            gflops: None,
        }),
        ..Stage3State::default()
    };
    let r = write_result(
        &run,
        &run.results(0),
        Some(&state),
        Some(&Reporting),
        RunStatus::Finished,
        WallTimes::default(),
        None,
    )
    .unwrap();
    let best = std::fs::read_to_string(run.best_cu()).unwrap();
    assert!(
        best.contains("//   block_size_x: 64\n")
            && best.contains("Failed configurations (1)")
            && best.contains("block_size_x=128: wrong answer (test t0"),
        "{best}"
    );
    assert_eq!(r.gpu.as_ref().unwrap().pci_bus_id, "00000000:1B:00.0");
    let meta = run.read_meta().unwrap();
    assert_eq!(meta.gpu, r.gpu, "run.json records the GPU too");
    assert!(meta.settings.allow_unsandboxed);
    assert_eq!(meta.sandbox, Some(protections));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.result_json()).unwrap()).unwrap();
    assert_eq!(json["gpu"]["cuda_visible_devices"], "1");
    assert_eq!(json["sandbox"]["network_namespace"], false);
    let report = std::fs::read_to_string(run.report_md()).unwrap();
    assert!(
        report.contains("GPU: NVIDIA H200 (PCI 00000000:1B:00.0")
            && report.contains("network namespace: NOT active"),
        "{report}"
    );
}
