//! Stage 2 graph tests on the CPU: real generator programs in kt-sandbox's harness (python3 + numpy), scripted
//! LLM answers, and a fake GPU whose "time" is proportional to the problem size, so the resize loop runs.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use kt_graph::{MemoryStore, RunId};
use kt_llm::{LlmClient, Recorder, ScriptedProvider};
use kt_sandbox::{Policy, PythonRuntime, Sandbox};

use super::*;
use crate::stage1::{SidecarFacts, from_sidecar};

pub(super) fn python() -> PythonRuntime {
    PythonRuntime::probe()
        .unwrap_or_else(|e| panic!("these tests need python3 with numpy: {e}. Run scripts/test.sh"))
}

/// Answers "kernel ran for (x * y * z) * ms_per_item ms" and writes the expected outputs as copies of the
/// output arguments (what a kernel that leaves them unchanged would produce).
pub(super) struct FakeGpu {
    pub(super) ms_per_item: f64,
}

#[async_trait]
impl ReferenceRunner for FakeGpu {
    fn availability(&self) -> Result<(), String> {
        Ok(())
    }

    async fn run(&self, job: ReferenceJob<'_>) -> Result<ReferenceRun, PipelineError> {
        let mut expected = std::collections::BTreeMap::new();
        std::fs::create_dir_all(job.test_dir.join("expected")).unwrap();
        for out in &job.info.outputs {
            let file = format!("expected/{out}.npy");
            std::fs::copy(
                job.test_dir.join(format!("args/{out}.npy")),
                job.test_dir.join(&file),
            )
            .unwrap();
            expected.insert(out.clone(), file);
        }
        let items: i64 = job.manifest.problem_size.unwrap().iter().product();
        Ok(ReferenceRun {
            time_ms: items as f64 * self.ms_per_item,
            expected,
        })
    }
}

fn vector_add() -> (String, Stage1Outcome) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels");
    let source = std::fs::read_to_string(root.join("vectorAdd.cu")).unwrap();
    let facts = SidecarFacts::load(&root.join("vectorAdd.toml")).unwrap();
    let out = from_sidecar(&source, None, &facts).unwrap();
    (source, out)
}

use crate::stage1::Stage1Outcome;

/// A generator whose n is `expr` (a Python expression over `seed`).
fn generator(n_expr: &str) -> String {
    format!(
        "import numpy as np\n\ndef generate(seed: int) -> list:\n    rng = np.random.default_rng(seed)\n    n = int({n_expr})\n    \
         a = rng.standard_normal(n).astype(np.float32)\n    b = rng.standard_normal(n).astype(np.float32)\n    \
         c = np.zeros(n, dtype=np.float32)\n    return [a, b, c, n]\n"
    )
}

pub(super) fn answer(node: &str, code: &str) -> String {
    format!(
        "[[answers]]\nnode = \"{node}\"\ntext = '''\nHere it is.\n\n```python\n{code}```\n'''\n\n"
    )
}

pub(super) fn deps(
    dir: &Path,
    llm: Option<LlmClient>,
    reference: Arc<dyn ReferenceRunner>,
    tests: usize,
) -> Stage2Deps {
    Stage2Deps {
        llm,
        prompts: Arc::new(crate::PromptLibrary::builtin().unwrap()),
        sandbox: Sandbox::new(Policy::for_generator()),
        python: python(),
        reference,
        tests_dir: dir.join("tests"),
        options: Stage2Options {
            tests,
            max_total_bytes: 64 << 20,
            ..Stage2Options::default()
        },
    }
}

pub(super) fn scripted(dir: &Path, script: &str) -> LlmClient {
    let path = dir.join("answers.toml");
    std::fs::write(&path, script).unwrap();
    LlmClient::new(ScriptedProvider::load(&path).unwrap())
        .with_recorder(Recorder::open(dir.join("llm.jsonl")).unwrap())
}

pub(super) fn prompts_of(dir: &Path, node: &str) -> Vec<String> {
    kt_llm::read_records(&dir.join("llm.jsonl"))
        .unwrap()
        .into_iter()
        .filter(|r| r.node == node)
        .map(|r| r.messages.last().unwrap().content.clone())
        .collect()
}

#[tokio::test]
async fn generator_that_raises_is_sent_back_with_its_traceback_and_the_fix_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let broken = "import numpy as np\n\ndef generate(seed: int) -> list:\n    raise ValueError('sizes went wrong ' + str(seed))\n";
    let fixed = generator("20001 + 2 * seed");
    let llm = scripted(
        dir.path(),
        &(answer("stage2.generator", broken) + &answer("stage2.generator", &fixed)),
    );
    let (source, s1) = vector_add();
    let d = deps(
        dir.path(),
        Some(llm),
        Arc::new(FakeGpu { ms_per_item: 1e-4 }),
        3,
    );
    let out = make_tests(
        d,
        &source,
        &s1.kernel,
        &s1.info,
        None,
        Arc::new(MemoryStore::new()),
        RunId::new("t"),
    )
    .await
    .unwrap();

    assert_eq!(out.tests.len(), 3);
    assert_eq!(
        out.tests.iter().map(|t| t.seed).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(
        out.tests
            .iter()
            .all(|t| t.tail && t.reference_time_ms.is_some())
    );
    assert_eq!(out.script, fixed);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let asks = prompts_of(dir.path(), "stage2.generator");
    assert_eq!(
        asks.len(),
        2,
        "one fix, then the fixed program is reused for every seed"
    );
    assert!(
        asks[1].contains("ValueError") && asks[1].contains("sizes went wrong 1"),
        "{}",
        asks[1]
    );
    assert!(
        asks[1].contains("raise ValueError"),
        "the failing program is shown: {}",
        asks[1]
    );

    // Each test is on disk in the tests format, with expected outputs and the time recorded.
    let stored = list_tests(&out.tests_dir).unwrap();
    assert_eq!(stored.len(), 3);
    for t in &stored {
        assert!(t.has_expected(), "{}", t.id);
        assert!(t.manifest.reference_time_ms.is_some());
        assert!(t.dir.join("generator.py").is_file());
        assert_eq!(t.id.len(), 16);
    }
}

#[tokio::test]
async fn too_fast_test_is_resized_with_the_measured_time() {
    let dir = tempfile::tempdir().unwrap();
    let small = generator("1001 + 2 * seed");
    let big = generator("30001 + 2 * seed");
    let llm = scripted(
        dir.path(),
        &(answer("stage2.generator", &small) + &answer("stage2.resize", &big)),
    );
    let (source, s1) = vector_add();
    let d = deps(
        dir.path(),
        Some(llm),
        Arc::new(FakeGpu { ms_per_item: 1e-4 }),
        2,
    );
    let out = make_tests(
        d,
        &source,
        &s1.kernel,
        &s1.info,
        None,
        Arc::new(MemoryStore::new()),
        RunId::new("t"),
    )
    .await
    .unwrap();

    let resize = prompts_of(dir.path(), "stage2.resize");
    assert_eq!(resize.len(), 1);
    // 1003 items at 1e-4 ms each: the LLM is told 0.100 ms and the bounds.
    assert!(resize[0].contains("0.100 ms"), "{}", resize[0]);
    assert!(resize[0].contains("between 1 and 200 ms"), "{}", resize[0]);
    assert!(
        resize[0].contains("1001 + 2 * seed"),
        "the program to resize is shown: {}",
        resize[0]
    );
    let times: Vec<f64> = out
        .tests
        .iter()
        .map(|t| t.reference_time_ms.unwrap())
        .collect();
    assert_eq!(out.tests.len(), 2);
    assert!(times.iter().all(|t| (1.0..=200.0).contains(t)), "{times:?}");
    // The too-fast test was removed: only accepted tests remain on disk.
    assert_eq!(list_tests(&out.tests_dir).unwrap().len(), 2);
}

#[tokio::test]
async fn sizes_that_are_all_multiples_of_32_get_a_tail_test() {
    let dir = tempfile::tempdir().unwrap();
    let aligned = generator("4096 * (seed + 4)");
    let tail = generator("4096 * (seed + 4) + 17");
    let llm = scripted(
        dir.path(),
        &(answer("stage2.generator", &aligned) + &answer("stage2.tail", &tail)),
    );
    let (source, s1) = vector_add();
    let d = deps(
        dir.path(),
        Some(llm),
        Arc::new(FakeGpu { ms_per_item: 1e-4 }),
        2,
    );
    let out = make_tests(
        d,
        &source,
        &s1.kernel,
        &s1.info,
        None,
        Arc::new(MemoryStore::new()),
        RunId::new("t"),
    )
    .await
    .unwrap();

    assert_eq!(out.tests.len(), 2);
    assert!(!out.tests[0].tail);
    assert!(out.tests[1].tail);
    assert_eq!(out.tests[1].problem_size, Some([4096 * 6 + 17, 1, 1]));
    // the aligned program's run for the second seed (started ahead, then revised away) left nothing behind
    assert_eq!(list_tests(&out.tests_dir).unwrap().len(), 2);
    assert!(!super::prefetch::GeneratorPrefetch::staging_for(&out.tests_dir).exists());
    let asks = prompts_of(dir.path(), "stage2.tail");
    assert_eq!(asks.len(), 1);
    assert!(asks[0].contains("[24576, 1, 1]"), "{}", asks[0]);
}

#[tokio::test]
async fn hand_written_script_without_gpu_writes_inputs_and_says_why_expected_outputs_are_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (source, s1) = vector_add();
    let reference = Arc::new(Unavailable {
        reason: "no CUDA driver".into(),
    });
    let d = deps(dir.path(), None, reference, 3);
    let script = generator("1001 + 2 * seed");
    let out = make_tests(
        d,
        &source,
        &s1.kernel,
        &s1.info,
        Some(script),
        Arc::new(MemoryStore::new()),
        RunId::new("t"),
    )
    .await
    .unwrap();
    assert_eq!(out.tests.len(), 3);
    assert_eq!(out.expected_missing.as_deref(), Some("no CUDA driver"));
    let stored = list_tests(&out.tests_dir).unwrap();
    assert_eq!(stored.len(), 3);
    assert!(
        stored
            .iter()
            .all(|t| !t.has_expected() && t.manifest.reference_time_ms.is_none())
    );
    // seeds 2 and 3 ran ahead, beside `tests/`, and moved in when their tests asked for them
    let seeds: Vec<u64> = stored.iter().map(|t| t.manifest.seed).collect();
    assert!([1, 2, 3].iter().all(|s| seeds.contains(s)), "{seeds:?}");
    assert!(!super::prefetch::GeneratorPrefetch::staging_for(&out.tests_dir).exists());
    assert_eq!(stored[0].manifest.outputs, ["c"]);
}

#[tokio::test]
async fn hand_written_script_that_raises_fails_at_once_with_the_traceback() {
    let dir = tempfile::tempdir().unwrap();
    let (source, s1) = vector_add();
    let d = deps(dir.path(), None, Arc::new(FakeGpu { ms_per_item: 1e-3 }), 3);
    let script = "def generate(seed):\n    return [1, 2]\n".to_string();
    let err = make_tests(
        d,
        &source,
        &s1.kernel,
        &s1.info,
        Some(script),
        Arc::new(MemoryStore::new()),
        RunId::new("t"),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains('2') && text.contains('4'),
        "names the argument counts: {text}"
    );
}

#[tokio::test]
async fn generator_ignoring_the_seed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let constant = generator("20001").replace("default_rng(seed)", "default_rng(0)");
    let seeded = generator("20001 + 2 * seed");
    let llm = scripted(
        dir.path(),
        &(answer("stage2.generator", &constant) + &answer("stage2.generator", &seeded)),
    );
    let (source, s1) = vector_add();
    let d = deps(
        dir.path(),
        Some(llm),
        Arc::new(FakeGpu { ms_per_item: 1e-4 }),
        2,
    );
    let out = make_tests(
        d,
        &source,
        &s1.kernel,
        &s1.info,
        None,
        Arc::new(MemoryStore::new()),
        RunId::new("t"),
    )
    .await
    .unwrap();
    assert_eq!(out.tests.len(), 2);
    assert_ne!(out.tests[0].id, out.tests[1].id);
    let asks = prompts_of(dir.path(), "stage2.generator");
    assert!(
        asks[1].contains("produced identical arguments"),
        "{}",
        asks[1]
    );
}

/// Stage 2 of vectorAdd with `d`, from the LLM or from `script`.
async fn make_vector_add_tests(
    d: Stage2Deps,
    source: &str,
    s1: &Stage1Outcome,
    script: Option<String>,
) -> Stage2Outcome {
    make_tests(
        d,
        source,
        &s1.kernel,
        &s1.info,
        script,
        Arc::new(MemoryStore::new()),
        RunId::new("t"),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn sizes_that_are_never_odd_get_a_test_whose_every_dimension_is_odd() {
    let dir = tempfile::tempdir().unwrap();
    // Not a multiple of 32 (the tail rule is met) but even: a kernel that skips the last odd element passes.
    let even = generator("4096 * (seed + 4) + 18");
    let odd = generator("4096 * (seed + 4) + 17");
    let llm = scripted(
        dir.path(),
        &(answer("stage2.generator", &even) + &answer("stage2.tail", &odd)),
    );
    let (source, s1) = vector_add();
    let d = deps(
        dir.path(),
        Some(llm),
        Arc::new(FakeGpu { ms_per_item: 1e-4 }),
        2,
    );
    let out = make_vector_add_tests(d, &source, &s1, None).await;
    assert!(out.tests[0].tail && !out.tests[0].all_odd);
    assert!(out.tests[1].all_odd);
    let asks = prompts_of(dir.path(), "stage2.tail");
    assert_eq!(asks.len(), 1);
    assert!(asks[0].contains("odd in every dimension"), "{}", asks[0]);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[tokio::test]
async fn a_size_that_is_a_multiple_of_a_power_of_two_in_every_test_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (source, s1) = vector_add();
    let d = deps(dir.path(), None, Arc::new(FakeGpu { ms_per_item: 1e-4 }), 2);
    let out = make_vector_add_tests(d, &source, &s1, Some(generator("4096 * (seed + 4)"))).await;
    let all = out.warnings.join("\n");
    assert!(all.contains("multiple of 64 in every test"), "{all}");
    assert!(all.contains("every problem-size dimension odd"), "{all}");
}

#[test]
fn the_largest_shared_power_of_two_is_found_per_dimension() {
    let sizes = [[96, 7, 1], [160, 9, 1]];
    assert_eq!(make_test::shared_powers_of_two(&sizes, 2), vec![(0, 32)]);
    assert!(make_test::all_odd(&[7, 9, 2], 2) && !make_test::all_odd(&[7, 8, 1], 2));
}

#[tokio::test]
async fn without_a_gpu_the_program_is_asked_and_checked_here_then_made_on_the_gpu_machine_unasked()
{
    let dir = tempfile::tempdir().unwrap();
    let program = generator("20001 + 2 * seed");
    // one answer only: the GPU machine must reuse the journaled one, not ask again
    let llm = scripted(dir.path(), &answer("stage2.generator", &program));
    let (source, s1) = vector_add();
    let store: Arc<dyn kt_graph::CheckpointStore> = Arc::new(MemoryStore::new());
    let here = deps(
        dir.path(),
        Some(llm.clone()),
        Arc::new(super::OnGpuMachine {
            reason: "no CUDA driver".into(),
        }),
        3,
    );
    let stopped = make_tests(
        here,
        &source,
        &s1.kernel,
        &s1.info,
        None,
        store.clone(),
        RunId::new("t"),
    )
    .await
    .unwrap_err();
    assert_eq!(
        stopped.gpu_unavailable(),
        Some("no CUDA driver"),
        "{stopped}"
    );
    assert!(
        super::list_tests(&dir.path().join("tests"))
            .unwrap()
            .is_empty(),
        "no test data is left where there is no GPU"
    );
    assert_eq!(prompts_of(dir.path(), "stage2.generator").len(), 1);

    let gpu = deps(
        dir.path(),
        Some(llm),
        Arc::new(FakeGpu { ms_per_item: 1e-4 }),
        3,
    );
    let out = make_tests(
        gpu,
        &source,
        &s1.kernel,
        &s1.info,
        None,
        store,
        RunId::new("t"),
    )
    .await
    .unwrap();
    assert_eq!(out.tests.len(), 3);
    for t in &out.tests {
        assert!(
            t.dir.join("manifest.json").is_file() && t.dir.join("args/a.npy").is_file(),
            "test {} has its files on the GPU machine",
            t.id
        );
    }
    assert_eq!(out.script.trim(), program.trim());
    assert_eq!(
        prompts_of(dir.path(), "stage2.generator").len(),
        1,
        "the program asked for without a GPU is the one used with it"
    );
}
