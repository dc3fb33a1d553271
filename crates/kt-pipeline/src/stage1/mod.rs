//! Stage 1: what a kernel means. Static facts come from kt-cuda; an LLM answers four focused questions (what
//! it computes, launch dimensionality, problem size per dimension, which pointers it writes), each checked
//! against the parsed signature and re-asked with the reason when wrong. The result is a [`KernelInfo`].
//! For suite kernels the sidecar can replace the LLM, or be compared with its answers.

pub mod answers;
pub mod check;
pub mod graph;
pub mod sidecar;

use std::sync::Arc;

use kt_cuda::Kernel;
use kt_graph::{CheckpointStore, Executor, RunId, RunOptions, RunOutcome};

pub use answers::{KernelDescription, LaunchDimensionality, OutputsAnswer, ProblemSizeAnswer};
pub use graph::{DEFAULT_ATTEMPTS, Stage1Deps, Stage1State};
pub use sidecar::{SidecarDisagreement, SidecarFacts, compare_with_sidecar};

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;

/// What Stage 1 produced.
#[derive(Debug, Clone)]
pub struct Stage1Outcome {
    pub info: KernelInfo,
    /// The parsed kernel the info was checked against.
    pub kernel: Kernel,
}

/// Runs the Stage 1 graph on `source` (the whole file) for kernel `kernel_name` (None: the only one), with
/// checkpoints in `store` under `run`. `default_block` is the naive launch's block when known (sidecar).
pub async fn analyze(
    deps: Stage1Deps,
    attempts: u32,
    source: &str,
    kernel_name: Option<&str>,
    default_block: Option<[u32; 3]>,
    store: Arc<dyn CheckpointStore>,
    run: RunId,
) -> Result<Stage1Outcome, PipelineError> {
    let graph = graph::build(deps, attempts)?;
    let executor = Executor::new(graph, store);
    let initial = Stage1State::new(source, kernel_name.map(str::to_string), default_block);
    let outcome = crate::graph_run::start_or_resume(&executor, run, initial, RunOptions::default())
        .await
        .map_err(|e| PipelineError::graph("stage 1", e))?;
    let state = match outcome {
        RunOutcome::Finished { state, .. } => state,
        other => {
            if let Some(waiting) = crate::graph_run::waiting_of(&other) {
                return Err(PipelineError::AwaitingAnswer(waiting));
            }
            return Err(PipelineError::Graph {
                stage: "stage 1",
                message: format!("the run stopped before its end at {}", other.checkpoint()),
            });
        }
    };
    match (state.info, state.kernel) {
        (Some(info), Some(kernel)) => Ok(Stage1Outcome { info, kernel }),
        _ => Err(PipelineError::Graph {
            stage: "stage 1",
            message: "the run finished without a KernelInfo".into(),
        }),
    }
}

/// Stage 1 without an LLM: the kernel parsed from `source`, the facts from its sidecar.
pub fn from_sidecar(
    source: &str,
    kernel_name: Option<&str>,
    sidecar: &SidecarFacts,
) -> Result<Stage1Outcome, PipelineError> {
    let parsed = kt_cuda::parse(source)?;
    let kernel = parsed
        .select_kernel(kernel_name.or(Some(sidecar.kernel.as_str())))?
        .clone();
    let info = sidecar.to_kernel_info(&kernel)?;
    Ok(Stage1Outcome { info, kernel })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kt_graph::MemoryStore;
    use kt_llm::{LlmClient, Recorder, ScriptedProvider, StructuredMode};

    const MATMUL: &str = include_str!("../../../../naive-kernels/matmul.cu");

    /// A client answering from `script` (TOML `[[answers]]`), recording to `dir/llm.jsonl`.
    fn scripted(dir: &std::path::Path, script: &str) -> LlmClient {
        let path = dir.join("answers.toml");
        std::fs::write(&path, script).unwrap();
        LlmClient::new(ScriptedProvider::load(&path).unwrap())
            .with_recorder(Recorder::open(dir.join("llm.jsonl")).unwrap())
    }

    fn deps(llm: LlmClient) -> Stage1Deps {
        Stage1Deps {
            llm,
            prompts: Arc::new(crate::PromptLibrary::builtin().unwrap()),
            mode: StructuredMode::Instruction,
        }
    }

    const GOOD_START: &str = r#"
[[answers]]
node = "stage1.describe"
text = '{"description": "C = A * B for row-major float matrices"}'
[[answers]]
node = "stage1.dimensions"
text = '{"dimensions": 2}'
"#;

    #[tokio::test]
    async fn an_answer_that_does_not_parse_is_asked_again_like_a_refused_one() {
        let dir = tempfile::tempdir().unwrap();
        let script = r#"
[[answers]]
node = "stage1.describe"
text = 'It multiplies two matrices, I think.'
[[answers]]
node = "stage1.describe"
text = '{"description": "C = A * B for row-major float matrices"}'
[[answers]]
node = "stage1.dimensions"
text = '{"dimensions": 2}'
[[answers]]
node = "stage1.problem_size"
text = '{"dimensions": ["B_width", "A_height"]}'
[[answers]]
node = "stage1.outputs"
text = '{"outputs": ["C"], "inputs_and_outputs": []}'
"#;
        // No re-asks inside the client: the node's own re-ask is what is tested.
        let llm = scripted(dir.path(), script).with_parse_retries(0);
        let out = analyze_matmul(llm).await.unwrap();
        assert_eq!(
            out.info.description,
            "C = A * B for row-major float matrices"
        );
        let records = kt_llm::read_records(&dir.path().join("llm.jsonl")).unwrap();
        let describes: Vec<&str> = records
            .iter()
            .filter(|r| r.node == "stage1.describe")
            .map(|r| r.messages.last().unwrap().content.as_str())
            .collect();
        assert_eq!(describes.len(), 2);
        assert!(
            describes[1].contains("could not be read"),
            "{}",
            describes[1]
        );
    }

    async fn analyze_matmul(llm: LlmClient) -> Result<Stage1Outcome, PipelineError> {
        analyze(
            deps(llm),
            3,
            MATMUL,
            None,
            None,
            Arc::new(MemoryStore::new()),
            RunId::new("t"),
        )
        .await
    }

    #[tokio::test]
    async fn wrong_names_are_reasked_with_the_reason_and_the_fixed_answers_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            r#"{GOOD_START}
[[answers]]
node = "stage1.problem_size"
text = '{{"dimensions": ["C_width", "A_height"]}}'
[[answers]]
node = "stage1.problem_size"
text = '{{"dimensions": ["B_width", "A_height"]}}'
[[answers]]
node = "stage1.outputs"
text = '{{"outputs": ["A", "D"], "inputs_and_outputs": []}}'
[[answers]]
node = "stage1.outputs"
text = '{{"outputs": ["C"], "inputs_and_outputs": []}}'
"#
        );
        let llm = scripted(dir.path(), &script);
        let out = analyze_matmul(llm).await.unwrap();
        assert_eq!(out.info.name, "matrixMultiply");
        assert_eq!(
            out.info
                .problem_size
                .iter()
                .map(|d| d.expression.as_str())
                .collect::<Vec<_>>(),
            ["B_width", "A_height"]
        );
        assert_eq!(out.info.outputs, ["C"]);
        assert_eq!(out.info.default_block, [16, 16, 1]);
        assert_eq!(
            out.info.parameters,
            ["A", "B", "C", "A_width", "A_height", "B_width"]
        );

        // The re-asks carried the refusal, verbatim, and the first asks did not.
        let records = kt_llm::read_records(&dir.path().join("llm.jsonl")).unwrap();
        let prompts: Vec<(&str, &str)> = records
            .iter()
            .map(|r| (r.node.as_str(), r.messages.last().unwrap().content.as_str()))
            .collect();
        let asks = |node: &str| {
            prompts
                .iter()
                .filter(|(n, _)| *n == node)
                .map(|(_, p)| *p)
                .collect::<Vec<_>>()
        };
        let size = asks("stage1.problem_size");
        assert_eq!(size.len(), 2);
        assert!(!size[0].contains("refused"));
        assert!(
            size[1].contains("`C_width` in `C_width` is not a parameter of `matrixMultiply`"),
            "{}",
            size[1]
        );
        let outs = asks("stage1.outputs");
        assert_eq!(outs.len(), 2);
        assert!(
            // the suite's matmul has non-const pointers (as the thesis prints it), so only `D` is wrong
            outs[1].contains("`D` is not a parameter")
                && !outs[1].contains("`A` is declared const"),
            "{}",
            outs[1]
        );
        // Every question started a fresh conversation: one user message each.
        assert!(records.iter().all(|r| r.messages.len() == 1));
    }

    #[tokio::test]
    async fn an_answer_that_stays_wrong_fails_stage1_after_the_bounded_attempts() {
        let dir = tempfile::tempdir().unwrap();
        let wrong = "[[answers]]\nnode = \"stage1.problem_size\"\ntext = '{\"dimensions\": [\"C\", \"A_height\"]}'\n";
        let llm = scripted(dir.path(), &format!("{GOOD_START}{wrong}{wrong}"));
        let err = analyze(
            deps(llm),
            2,
            MATMUL,
            None,
            None,
            Arc::new(MemoryStore::new()),
            RunId::new("t"),
        )
        .await
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("`C` in `C` is a pointer parameter"), "{text}");
        let records = kt_llm::read_records(&dir.path().join("llm.jsonl")).unwrap();
        assert_eq!(
            records
                .iter()
                .filter(|r| r.node == "stage1.problem_size")
                .count(),
            2
        );
    }

    #[tokio::test]
    async fn sidecar_block_is_used_and_disagreements_are_listed_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            r#"{GOOD_START}
[[answers]]
node = "stage1.problem_size"
text = '{{"dimensions": ["A_width", "A_height"]}}'
[[answers]]
node = "stage1.outputs"
text = '{{"outputs": ["C"]}}'
"#
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels");
        let facts = SidecarFacts::load(&root.join("matmul.toml")).unwrap();
        let llm = scripted(dir.path(), &script);
        let out = analyze(
            deps(llm),
            1,
            MATMUL,
            None,
            facts.default_block,
            Arc::new(MemoryStore::new()),
            RunId::new("t"),
        )
        .await
        .unwrap();
        let d = compare_with_sidecar(&out.info, &facts);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].field, "problem_size[x]");
    }

    #[test]
    fn stage1_from_the_sidecar_needs_no_llm() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels");
        let facts = SidecarFacts::load(&root.join("vectorAdd.toml")).unwrap();
        let src = std::fs::read_to_string(root.join("vectorAdd.cu")).unwrap();
        let out = from_sidecar(&src, None, &facts).unwrap();
        assert_eq!(out.info.outputs, ["c"]);
        assert_eq!(out.info.problem_size.len(), 1);
        assert_eq!(out.kernel.name, "vectorAdd");
    }
}
