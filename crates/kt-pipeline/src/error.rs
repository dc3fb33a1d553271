//! The one error type of kt-pipeline. Every variant says what happened, where (file, prompt, node, test), and
//! what the user can do about it. Stage 1/2 variants, prompt and run-directory variants live here; Stage 3 adds
//! its own variants to the same enum, and the two Stage 3 types those variants carry live beside it
//! (`error/backend.rs`: [`BackendError`]; `error/failure_kind.rs`: [`FailureKind`]), so the crate's error,
//! on the ground floor, needs nothing from the stages above it.

use std::path::PathBuf;

mod backend;
mod failure_kind;

pub use backend::BackendError;
pub use failure_kind::FailureKind;

/// What a run stopped before Stage 2 for want of a GPU says about its tests.
pub const TESTS_WHERE_USED: &str = "Stage 1 is done and Stage 2's generator program is written and \
    checked, and tests are made where they are used: the program makes them when the run continues on a \
    machine with a GPU (no test data is left here)";

/// Everything that can go wrong in kt-pipeline.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    // ---- prompt templates (prompt.rs) ----
    #[error(
        "cannot read the prompts directory {dir}: {source}; pass --prompts DIR or set KT_PROMPTS_DIR"
    )]
    PromptsDirUnreadable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "prompt template {origin} has a bad front-matter block: {message} (it must start with a `+++` line, \
         then TOML with `answer = \"RustTypeName\"` and `description = \"...\"`, then a closing `+++` line)"
    )]
    PromptFrontMatter { origin: String, message: String },
    #[error("prompt template {origin} does not compile (line {line} of the file): {message}")]
    PromptSyntax {
        origin: String,
        line: usize,
        message: String,
    },
    #[error("no prompt template named `{name}` (looked in {searched}); available: {}", available.join(", "))]
    PromptNotFound {
        name: String,
        searched: String,
        available: Vec<String>,
    },
    #[error("rendering prompt `{name}` ({origin}) failed: {message}")]
    PromptRender {
        name: String,
        origin: String,
        message: String,
    },
    #[error(
        "prompt `{name}` ({origin}) declares answer = \"{found}\" but its caller parses the answer as `{expected}`; \
         fix the template's front matter"
    )]
    PromptAnswerMismatch {
        name: String,
        origin: String,
        expected: String,
        found: String,
    },

    // ---- run directory (kt-record) ----
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "run {run} is being worked on by {holder}; two processes must not write one run. Wait for it to end \
         (or stop it), or pass --wait to start when it does"
    )]
    RunBusy { run: PathBuf, holder: String },
    #[error("{path} is not valid {what}: {message}")]
    BadFile {
        path: PathBuf,
        what: &'static str,
        message: String,
    },

    // ---- Stage 1 / Stage 2 ----
    #[error("problem-size expression `{expression}`: {message}")]
    SizeExpression { expression: String, message: String },
    #[error("{0}")]
    Cuda(#[source] Box<kt_cuda::CudaError>),
    /// The LLM service failed past its retries (rate limit, timeout, connection error, 5xx). The run ends
    /// `llm_unavailable` (exit 75) and `kt resume` continues it from its last checkpoint.
    #[error(
        "{LLM_UNAVAILABLE} (node `{node}`): {source}; the run is saved: `kt resume RUN` continues from its last checkpoint once the service answers again"
    )]
    LlmUnavailable {
        node: String,
        #[source]
        source: Box<kt_llm::LlmError>,
    },
    /// The `manual` provider has no answer yet: the run pauses (not a failure) until one is given.
    #[error(
        "waiting for an answer to `{}`: the prompt is {}; write the answer to {} or continue with \
         `kt resume RUN --answer FILE`",
        .0.node, .0.prompt_file.display(), .0.answer_file.display()
    )]
    AwaitingAnswer(kt_record::WaitingAnswer),
    #[error("LLM call `{node}` failed: {source}")]
    Llm {
        node: String,
        #[source]
        source: Box<kt_llm::LlmError>,
    },
    /// An LLM answer that kt checked and refused. Nodes retry these with the reason appended to the prompt.
    #[error("the answer to `{node}` was refused: {reason}")]
    AnswerRefused { node: String, reason: String },
    #[error("`{node}` gave up after {attempts} attempts; the last answer was refused: {reason}")]
    AttemptsExhausted {
        node: String,
        attempts: u32,
        reason: String,
    },
    #[error("the graph of {stage} failed: {message}")]
    Graph {
        stage: &'static str,
        message: String,
    },
    /// A stage's graph stopped on an error, a failed node's own error kept inside (see
    /// [`PipelineError::node_error`]).
    #[error("the graph of {stage} failed: {graph}")]
    GraphRun {
        stage: &'static str,
        graph: Box<kt_graph::GraphError>,
    },
    #[error(
        "Stage 1 needs an LLM (none configured): pass --llm PROVIDER:MODEL, or --info-from-sidecar for a suite kernel with a .toml sidecar"
    )]
    NoLlm,
    #[error("sidecar {path}: {message}")]
    Sidecar { path: PathBuf, message: String },
    /// A generator program that failed (or an answer without one); retried with `reason` in the next prompt.
    #[error("`{node}`: {reason}")]
    GeneratorRefused {
        node: String,
        reason: String,
        script: Option<String>,
    },
    #[error("the generator could not be run: {0}")]
    Generator(#[source] Box<kt_sandbox::generator::GeneratorError>),
    #[error(
        "no GPU to run the original kernel on the generated tests ({reason}); their inputs are written, but \
         expected outputs and reference times need a machine with a CUDA GPU (`kt doctor` checks one)"
    )]
    NoGpu { reason: String },
    #[error("a CUDA GPU is needed from here on: {reason}; {}", TESTS_WHERE_USED)]
    TestsNeedGpu { reason: String },
    #[error("test {test} cannot be made again on this machine: {reason}")]
    TestsRemade { test: String, reason: String },
    #[error("the original kernel failed on test {test}: {message}")]
    Reference {
        test: String,
        message: String,
        inputs_at_fault: bool,
    },

    // ---- Stage 3 (stage3/, strategy/) ----
    #[error("no strategy named `{name}` (looked in {searched}); available: {}", available.join(", "))]
    StrategyNotFound {
        name: String,
        searched: String,
        available: Vec<String>,
    },
    #[error("strategy {origin} is invalid: {message}")]
    StrategyInvalid { origin: String, message: String },
    /// A candidate kernel that failed (compile error, wrong answer, hang, refused rewrite). Stage 3 nodes retry
    /// these with `feedback` sent back to the LLM; after the last attempt the step is dropped and recorded.
    #[error("step `{step}`: {kind}: {feedback}")]
    CandidateFailed {
        step: String,
        kind: FailureKind,
        feedback: String,
        /// The LLM calls the failed attempt made, carried to the next attempt so no tokens go unaccounted.
        calls: Vec<crate::llm_call::LlmCallRecord>,
    },
    /// The GPU side could not work at all (no GPU, driver, NVRTC): the run stops, resumable.
    #[error("{0}; the run is saved: resume it with `kt resume RUN` on a machine with a CUDA GPU")]
    Tuning(BackendError),
    #[error(
        "Stage 3 needs an LLM (none configured): pass --llm PROVIDER:MODEL (e.g. openai:gpt-4.1, or replay:CASSETTE.jsonl), or set [llm] provider and model in kt.toml"
    )]
    NoLlmForStage3,
    #[error("the journal of node `{node}` failed: {message}")]
    Journal { node: String, message: String },
    /// A record of the tests format that is not what kt writes (an unknown dtype, a bad .npy file).
    #[error(transparent)]
    Record(kt_record::RecordError),
}

/// The words every LLM-outage error starts with (what a person reads; programs ask
/// [`PipelineError::is_llm_unavailable`]).
pub const LLM_UNAVAILABLE: &str = "the LLM service is unavailable";

/// Whether `e` is an outage of the LLM service (as opposed to a bad answer, bad credentials or a bad request).
/// The one place that decides it.
pub fn is_llm_outage(e: &kt_llm::LlmError) -> bool {
    e.is_unavailable()
}

// Boxed: these errors are large, and every `Result` of the crate would carry their size.
impl From<kt_cuda::CudaError> for PipelineError {
    fn from(e: kt_cuda::CudaError) -> Self {
        Self::Cuda(Box::new(e))
    }
}

/// A run directory's I/O and JSON errors keep the variants they had when the run directory was this crate's.
impl From<kt_record::RecordError> for PipelineError {
    fn from(e: kt_record::RecordError) -> Self {
        match e {
            kt_record::RecordError::Io {
                action,
                path,
                source,
            } => Self::Io {
                action,
                path,
                source,
            },
            kt_record::RecordError::BadFile {
                path,
                what,
                message,
            } => Self::BadFile {
                path,
                what,
                message,
            },
            other => Self::Record(other),
        }
    }
}

impl From<kt_sandbox::generator::GeneratorError> for PipelineError {
    fn from(e: kt_sandbox::generator::GeneratorError) -> Self {
        Self::Generator(Box::new(e))
    }
}

impl PipelineError {
    /// The error of a failed LLM call of `node`: [`PipelineError::LlmUnavailable`] for an outage, else
    /// [`PipelineError::Llm`].
    pub fn from_llm(node: impl Into<String>, source: kt_llm::LlmError) -> Self {
        let node = node.into();
        if is_llm_outage(&source) {
            Self::LlmUnavailable {
                node,
                source: Box::new(source),
            }
        } else {
            Self::Llm {
                node,
                source: Box::new(source),
            }
        }
    }

    /// The error of a graph run of `stage` that did not come to its end.
    pub fn graph(stage: &'static str, graph: kt_graph::GraphError) -> Self {
        Self::GraphRun {
            stage,
            graph: Box::new(graph),
        }
    }

    /// The pipeline error a failed node of this graph run returned (looking through subgraphs).
    pub fn node_error(&self) -> Option<&PipelineError> {
        match self {
            Self::GraphRun { graph, .. } => graph.node_error::<PipelineError>(),
            _ => None,
        }
    }

    /// Whether this error, or the error of the node that stopped its graph, is an LLM outage.
    pub fn is_llm_unavailable(&self) -> bool {
        matches!(self, Self::LlmUnavailable { .. })
            || self.node_error().is_some_and(Self::is_llm_unavailable)
    }

    /// Why no GPU could be used, when that is what stopped this run (here or in a node of its graph).
    pub fn gpu_unavailable(&self) -> Option<&str> {
        match self {
            Self::Tuning(BackendError::GpuUnavailable { detail }) => Some(detail),
            Self::TestsNeedGpu { reason } => Some(reason),
            _ => self.node_error().and_then(Self::gpu_unavailable),
        }
    }

    /// Shorthand for an I/O error with the action and the path it concerned.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
