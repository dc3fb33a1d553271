//! Stage 2 for a kernel that reads `__constant__ float coeffs[16]`: the prompt describes the symbol, the
//! program's answer fills it, a program that leaves it out is sent back with the symbol named, and the tests
//! carry it on disk and into the tuner's tests (the field a sidecar's `constants` fills).

use std::path::Path;
use std::sync::Arc;

use kt_graph::{MemoryStore, RunId};
use kt_tuner::{ParamSpec, TestSet};

use super::generator_prompt::generator_prompt;
use super::tests::{FakeGpu, answer, deps, prompts_of, scripted};
use super::*;
use crate::kernel_info::ProblemDimension;
use crate::stage2::state::Revision;

const FIR: &str = "__constant__ float coeffs[16];\n\
extern \"C\" __global__ void fir(float *out, const float *in, int n) {\n\
    int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
    if (i >= n) return;\n\
    float sum = 0.0f;\n\
    for (int k = 0; k < 16; k++) sum += coeffs[k] * in[i + k];\n\
    out[i] = sum;\n\
}\n";

fn fir() -> (Kernel, KernelInfo) {
    let kernel = kt_cuda::parse(FIR).unwrap().kernels[0].clone();
    let info = KernelInfo {
        name: "fir".into(),
        parameters: vec!["out".into(), "in".into(), "n".into()],
        description: "a 16-tap FIR filter: out[i] = sum_k coeffs[k] * in[i + k]".into(),
        problem_size: vec![ProblemDimension {
            expression: "n".into(),
        }],
        outputs: vec!["out".into()],
        inputs_and_outputs: Vec::new(),
        default_block: [256, 1, 1],
    };
    (kernel, info)
}

/// A generator for `fir` returning `answer` (over `out`, `inp`, `n`, `coeffs`).
fn generator(answer: &str) -> String {
    format!(
        "import numpy as np\n\ndef generate(seed: int):\n    rng = np.random.default_rng(seed)\n    \
         n = 20001 + 2 * seed\n    out = np.zeros(n, dtype=np.float32)\n    \
         inp = rng.standard_normal(n + 15).astype(np.float32)\n    \
         coeffs = rng.standard_normal(16).astype(np.float32)\n    return {answer}\n"
    )
}

const WITH_CONSTANTS: &str = r#"{"args": [out, inp, n], "constants": {"coeffs": coeffs}}"#;

#[test]
fn the_prompt_describes_each_constant_with_its_type_and_count_and_how_to_return_it() {
    let (kernel, info) = fir();
    let prompts = crate::PromptLibrary::builtin().unwrap();
    let options = Stage2Options::default();
    let mut state = Stage2State {
        source: FIR.into(),
        ..Stage2State::default()
    };
    let (prompt, label) = generator_prompt(&prompts, &options, &state, &kernel, &info, 1).unwrap();
    assert_eq!(label, "stage2.generator");
    let text = prompt.text;
    assert!(
        text.contains("- `coeffs`: `__constant__ float coeffs[16]` — a numpy float32 array of exactly 16 elements"),
        "{text}"
    );
    assert!(
        text.contains("def generate(seed: int) -> dict")
            && text.contains(r#"returning `{"args": [...], "constants": {"coeffs": ...}}`"#),
        "{text}"
    );

    // a revision keeps them
    state.script = Some(generator(WITH_CONSTANTS));
    state.revision = Some(Revision::Resize {
        seed: 1,
        problem_size: Some([20003, 1, 1]),
        measured_ms: 0.2,
    });
    let (resize, _) = generator_prompt(&prompts, &options, &state, &kernel, &info, 1).unwrap();
    assert!(
        resize
            .text
            .contains("Keep filling the `__constant__` symbols the kernel reads (`coeffs`)"),
        "{}",
        resize.text
    );

    // a kernel without constant memory reads as before
    let plain = kt_cuda::parse("__global__ void k(float *a, int n) { a[0] = n; }").unwrap();
    let (prompt, _) = generator_prompt(
        &prompts,
        &options,
        &Stage2State::default(),
        &plain.kernels[0],
        &info,
        1,
    )
    .unwrap();
    assert!(
        !prompt.text.contains("__constant__")
            && prompt.text.contains("def generate(seed: int) -> list"),
        "{}",
        prompt.text
    );
}

async fn make(
    dir: &Path,
    llm: Option<kt_llm::LlmClient>,
    script: Option<String>,
) -> Result<Stage2Outcome, PipelineError> {
    let (kernel, info) = fir();
    let d = deps(dir, llm, Arc::new(FakeGpu { ms_per_item: 1e-4 }), 2);
    make_tests(
        d,
        FIR,
        &kernel,
        &info,
        script,
        Arc::new(MemoryStore::new()),
        RunId::new("t"),
    )
    .await
}

#[tokio::test]
async fn a_program_that_leaves_a_constant_out_is_told_to_add_it_and_the_tests_carry_it() {
    let dir = tempfile::tempdir().unwrap();
    let without = generator("[out, inp, n]");
    let with = generator(WITH_CONSTANTS);
    let llm = scripted(
        dir.path(),
        &(answer("stage2.generator", &without) + &answer("stage2.generator", &with)),
    );
    let out = make(dir.path(), Some(llm), None).await.unwrap();
    assert_eq!(out.tests.len(), 2);
    assert_eq!(out.script, with);

    let asks = prompts_of(dir.path(), "stage2.generator");
    assert_eq!(asks.len(), 2, "one fix, then the program is reused");
    assert!(
        asks[0].contains("`__constant__ float coeffs[16]`"),
        "{}",
        asks[0]
    );
    assert!(
        asks[1].contains("Your previous answer was refused")
            && asks[1].contains("no contents for the `__constant__` symbol `coeffs`")
            && asks[1].contains(r#""constants": {"coeffs": <numpy array>}"#),
        "{}",
        asks[1]
    );

    // on disk: constants/coeffs.npy, listed in the manifest
    let stored = list_tests(&out.tests_dir).unwrap();
    for t in &stored {
        assert_eq!(t.manifest.constants.len(), 1, "{}", t.id);
        assert_eq!(t.manifest.constants[0].shape, Some(vec![16]));
        assert!(t.dir.join("constants/coeffs.npy").is_file());
    }
    // and in the tuner's tests, where the worker writes them into the module before each launch
    let (kernel, _) = fir();
    let tests = TestSet::load_dir(
        &out.tests_dir,
        &ParamSpec::from_kernel(&kernel),
        &Default::default(),
    )
    .unwrap();
    assert_eq!(tests.tests.len(), 2);
    for t in &tests.tests {
        let c = &t.constants;
        assert_eq!(
            (c.len(), c[0].name.as_str(), c[0].elements),
            (1, "coeffs", Some(16))
        );
        assert!(matches!(&c[0].source, kt_tuner::ArraySource::Npy { .. }));
    }
    assert_ne!(tests.tests[0].constants, tests.tests[1].constants);
}

#[tokio::test]
async fn a_hand_written_program_that_leaves_a_constant_out_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = make(
        dir.path(),
        None,
        Some(generator(r#"{"args": [out, inp, n]}"#)),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("`__constant__` symbol `coeffs`"), "{err}");
}
