//! The Stage 1 graph: `parse` (kt-cuda, no LLM) → `describe` → `dimensions` → `problem_size` → `outputs` →
//! `assemble`. Each LLM node asks one focused question in a fresh conversation, checks the answer against the
//! parsed signature, and on a refusal fails with [`PipelineError::AnswerRefused`]; its retry policy appends
//! the reason to `feedback` so the next attempt's prompt shows the LLM what was wrong.

use std::sync::Arc;
use std::time::Duration;

use kt_cuda::Kernel;
use kt_graph::{END, GraphBuilder, NodeContext, Retry, START};
use kt_llm::{LlmClient, LlmRequest, StructuredMode};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::PipelineError;
use crate::kernel_info::{KernelInfo, ProblemDimension};
use crate::prompt::PromptLibrary;

use super::answers::{
    KernelDescription, LaunchDimensionality, OutputsAnswer, ProblemSizeAnswer, names,
};
use super::check::{self, Refusal};

kt_graph::state! {
    /// Stage 1's state. `feedback` is only ever written by retry handlers (attempt-local), so every question
    /// starts with an empty list and sees only the refusals of its own earlier attempts.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct Stage1State => Stage1Update {
        #[overwrite] pub source: String,
        #[overwrite] pub kernel_name: Option<String>,
        #[overwrite] pub default_block: Option<[u32; 3]>,
        #[overwrite] pub kernel: Option<Kernel>,
        #[overwrite] pub description: Option<String>,
        #[overwrite] pub dimensions: Option<usize>,
        #[overwrite] pub problem_size: Option<Vec<ProblemDimension>>,
        #[overwrite] pub outputs: Option<Vec<String>>,
        #[overwrite] pub inputs_and_outputs: Option<Vec<String>>,
        #[overwrite] pub feedback: Vec<String>,
        #[overwrite] pub info: Option<KernelInfo>,
    }
}

impl Stage1State {
    /// The initial state: the whole source file, the kernel asked for (None = the only one), and the block
    /// shape of the naive launch when known (sidecar).
    pub fn new(
        source: impl Into<String>,
        kernel_name: Option<String>,
        default_block: Option<[u32; 3]>,
    ) -> Self {
        Self {
            source: source.into(),
            kernel_name,
            default_block,
            ..Self::default()
        }
    }

    fn kernel(&self) -> Result<&Kernel, PipelineError> {
        self.kernel.as_ref().ok_or_else(|| PipelineError::Graph {
            stage: "stage 1",
            message: "a question ran before `parse`".into(),
        })
    }
}

/// What the LLM nodes need.
#[derive(Clone)]
pub struct Stage1Deps {
    pub llm: LlmClient,
    pub prompts: Arc<PromptLibrary>,
    pub mode: StructuredMode,
}

/// How many times one question may be asked (first attempt included) before Stage 1 gives up.
pub const DEFAULT_ATTEMPTS: u32 = 3;

/// Builds the Stage 1 graph. `attempts` bounds each question (1 = no re-ask).
pub fn build(
    deps: Stage1Deps,
    attempts: u32,
) -> Result<kt_graph::CompiledGraph<Stage1State>, PipelineError> {
    let mut g = GraphBuilder::<Stage1State>::new();
    g.node(
        "parse",
        kt_graph::node_fn(|s: Arc<Stage1State>, _ctx: NodeContext| async move { parse(&s) }),
    )
    .writes(&["kernel"]);
    g.node("describe", Ask::<Describe>::new(deps.clone()))
        .retry(refusal_retry(attempts))
        .writes(&["description"]);
    g.node("dimensions", Ask::<Dimensions>::new(deps.clone()))
        .retry(refusal_retry(attempts))
        .writes(&["dimensions"]);
    g.node("problem_size", Ask::<ProblemSize>::new(deps.clone()))
        .retry(refusal_retry(attempts))
        .writes(&["problem_size"]);
    g.node("outputs", Ask::<Outputs>::new(deps))
        .retry(refusal_retry(attempts))
        .writes(&["outputs", "inputs_and_outputs"]);
    g.node(
        "assemble",
        kt_graph::node_fn(|s: Arc<Stage1State>, _ctx: NodeContext| async move { assemble(&s) }),
    )
    .writes(&["info"]);
    g.edge(START, "parse");
    g.edge("parse", "describe");
    g.edge("describe", "dimensions");
    g.edge("dimensions", "problem_size");
    g.edge("problem_size", "outputs");
    g.edge("outputs", "assemble");
    g.edge("assemble", END);
    g.compile().map_err(|e| PipelineError::Graph {
        stage: "stage 1",
        message: e.to_string(),
    })
}

/// An answer that came but cannot be read as the requested type.
fn is_unusable_answer(e: &kt_llm::LlmError) -> bool {
    matches!(
        e,
        kt_llm::LlmError::SchemaMismatch { .. }
            | kt_llm::LlmError::NoCode { .. }
            | kt_llm::LlmError::BadResponse { .. }
    )
}

/// Re-asks refused (and unreadable) answers only (an unreachable LLM or a bad template is not made better by asking again),
/// with the refusal appended to the next prompt.
fn refusal_retry(attempts: u32) -> Retry<Stage1State, PipelineError> {
    Retry::up_to(attempts)
        .backoff(Duration::ZERO, 1.0, Duration::ZERO)
        .jitter(0.0)
        .no_retry_on_timeout()
        .retry_if(|e| matches!(e, PipelineError::AnswerRefused { .. }))
        .before_retry(
            |e| matches!(e, PipelineError::AnswerRefused { .. }),
            |e, s: &mut Stage1State| {
                if let PipelineError::AnswerRefused { reason, .. } = e {
                    s.feedback.push(reason.clone());
                }
            },
        )
}

fn parse(s: &Stage1State) -> Result<Stage1Update, PipelineError> {
    let parsed = kt_cuda::parse(&s.source)?;
    let kernel = parsed.select_kernel(s.kernel_name.as_deref())?.clone();
    Ok(Stage1Update::default().kernel(Some(kernel)))
}

fn assemble(s: &Stage1State) -> Result<Stage1Update, PipelineError> {
    let kernel = s.kernel()?;
    let missing = |what: &str| PipelineError::Graph {
        stage: "stage 1",
        message: format!("`assemble` ran without {what}"),
    };
    let problem_size = s
        .problem_size
        .clone()
        .ok_or_else(|| missing("a problem size"))?;
    let info = KernelInfo {
        name: kernel.name.clone(),
        parameters: kernel.params.iter().map(|p| p.name.clone()).collect(),
        description: s
            .description
            .clone()
            .ok_or_else(|| missing("a description"))?,
        default_block: s
            .default_block
            .unwrap_or_else(|| check::default_block(problem_size.len())),
        problem_size,
        outputs: s.outputs.clone().ok_or_else(|| missing("outputs"))?,
        inputs_and_outputs: s.inputs_and_outputs.clone().unwrap_or_default(),
    };
    Ok(Stage1Update::default().info(Some(info)))
}

/// What every Stage 1 template sees.
#[derive(Debug, Serialize)]
pub(crate) struct PromptKernel<'a> {
    pub name: &'a str,
    pub source: &'a str,
    pub params: Vec<PromptParam<'a>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct PromptParam<'a> {
    pub name: &'a str,
    pub type_text: &'a str,
    pub base_type: &'a str,
    pub pointer: bool,
    pub is_const: bool,
}

impl<'a> PromptKernel<'a> {
    pub(crate) fn new(kernel: &'a Kernel, source: &'a str) -> Self {
        Self {
            name: &kernel.name,
            source,
            params: kernel
                .params
                .iter()
                .map(|p| PromptParam {
                    name: &p.name,
                    type_text: &p.type_text,
                    base_type: &p.base_type,
                    pointer: p.is_pointer(),
                    is_const: p.is_const,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct QuestionContext<'a> {
    kernel: PromptKernel<'a>,
    dimensions: Option<usize>,
    errors: &'a [String],
}

/// One focused Stage 1 question: its template, node label, answer type, and the check of the answer.
trait Question: Send + Sync + 'static {
    /// Graph node name; the LLM request's node label is `stage1.<NODE>` (the key of scripted answers).
    const NODE: &'static str;
    const TEMPLATE: &'static str;
    const ANSWER: &'static str;
    type Answer: JsonSchema + DeserializeOwned + Serialize + Send + 'static;
    fn check(
        state: &Stage1State,
        kernel: &Kernel,
        answer: &Self::Answer,
    ) -> Result<Stage1Update, Refusal>;
}

struct Describe;
impl Question for Describe {
    const NODE: &'static str = "describe";
    const TEMPLATE: &'static str = "stage1-describe";
    const ANSWER: &'static str = names::DESCRIBE;
    type Answer = KernelDescription;
    fn check(_: &Stage1State, _: &Kernel, a: &KernelDescription) -> Result<Stage1Update, Refusal> {
        Ok(Stage1Update::default().description(Some(check::check_description(a)?)))
    }
}

struct Dimensions;
impl Question for Dimensions {
    const NODE: &'static str = "dimensions";
    const TEMPLATE: &'static str = "stage1-dimensions";
    const ANSWER: &'static str = names::DIMENSIONS;
    type Answer = LaunchDimensionality;
    fn check(
        _: &Stage1State,
        _: &Kernel,
        a: &LaunchDimensionality,
    ) -> Result<Stage1Update, Refusal> {
        Ok(Stage1Update::default().dimensions(Some(check::check_dimensionality(a)?)))
    }
}

struct ProblemSize;
impl Question for ProblemSize {
    const NODE: &'static str = "problem_size";
    const TEMPLATE: &'static str = "stage1-problem-size";
    const ANSWER: &'static str = names::PROBLEM_SIZE;
    type Answer = ProblemSizeAnswer;
    fn check(s: &Stage1State, k: &Kernel, a: &ProblemSizeAnswer) -> Result<Stage1Update, Refusal> {
        let dims = s.dimensions.unwrap_or(a.dimensions.len());
        Ok(Stage1Update::default().problem_size(Some(check::check_problem_size(k, dims, a)?)))
    }
}

struct Outputs;
impl Question for Outputs {
    const NODE: &'static str = "outputs";
    const TEMPLATE: &'static str = "stage1-outputs";
    const ANSWER: &'static str = names::OUTPUTS;
    type Answer = OutputsAnswer;
    fn check(_: &Stage1State, k: &Kernel, a: &OutputsAnswer) -> Result<Stage1Update, Refusal> {
        let (outputs, both) = check::check_outputs(k, a)?;
        Ok(Stage1Update::default()
            .outputs(Some(outputs))
            .inputs_and_outputs(Some(both)))
    }
}

/// The node that asks question `Q`.
struct Ask<Q> {
    deps: Stage1Deps,
    _q: std::marker::PhantomData<fn() -> Q>,
}

impl<Q> Ask<Q> {
    fn new(deps: Stage1Deps) -> Self {
        Self {
            deps,
            _q: std::marker::PhantomData,
        }
    }
}

impl<Q: Question> kt_graph::Node<Stage1State> for Ask<Q> {
    type Error = PipelineError;

    fn run(
        &self,
        state: Arc<Stage1State>,
        ctx: NodeContext,
    ) -> impl std::future::Future<Output = Result<Stage1Update, PipelineError>> + Send {
        let deps = self.deps.clone();
        async move {
            let kernel = state.kernel()?;
            let label = format!("stage1.{}", Q::NODE);
            let context = QuestionContext {
                kernel: PromptKernel::new(kernel, &state.source),
                dimensions: state.dimensions,
                errors: &state.feedback,
            };
            let prompt = deps.prompts.render_as(Q::TEMPLATE, Q::ANSWER, &context)?;
            tracing::debug!(node = %label, template_hash = %prompt.template_hash, text_hash = %prompt.text_hash, "asking");
            // Which template (and which exact text) produced the call, for the run's event stream.
            ctx.emit("prompt", serde_json::json!({ "node": label, "template": prompt.name, "template_hash": prompt.template_hash, "text_hash": prompt.text_hash }));
            let request = LlmRequest::new(label.clone()).user(prompt.text);
            let llm = deps.llm.clone();
            let answer: Q::Answer = ctx
                .effect("llm", || async move {
                    llm.structured::<Q::Answer>(request, deps.mode)
                        .await
                        .map(|(a, _)| a)
                })
                .await
                .map_err(|e| match e {
                    // An answer that does not parse is re-asked like a refused one, with why in the prompt.
                    kt_graph::EffectError::Failed { source, .. } if is_unusable_answer(&source) => {
                        PipelineError::AnswerRefused {
                            node: label.clone(),
                            reason: format!(
                                "the answer could not be read ({source}); answer with exactly the JSON asked for"
                            ),
                        }
                    }
                    kt_graph::EffectError::Failed { source, .. } => {
                        crate::graph_run::llm_failure(&ctx, &label, source)
                    }
                    kt_graph::EffectError::Journal { source, .. } => PipelineError::Graph {
                        stage: "stage 1",
                        message: source.to_string(),
                    },
                })?;
            Q::check(&state, kernel, &answer).map_err(|reason| {
                ctx.emit(
                    "answer_refused",
                    serde_json::json!({ "node": label, "reason": reason }),
                );
                PipelineError::AnswerRefused {
                    node: label,
                    reason,
                }
            })
        }
    }
}
