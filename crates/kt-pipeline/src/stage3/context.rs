//! [`Stage3Context`]: what every Stage 3 node needs besides the state — the strategy, the facts about the
//! kernel, the prompts, the LLM client and the tuning backend. Shared read-only by all nodes.

use std::path::PathBuf;
use std::sync::Arc;

use kt_llm::{LlmClient, StructuredMode};

use super::backend::tuning_backend::{BackendError, NoProgress, TuningBackend, TuningProgress};
use crate::error::PipelineError;
use crate::strategy::Strategy;
use crate::{KernelInfo, PromptLibrary};

/// The facts about the user's kernel every rewrite is checked against.
#[derive(Debug, Clone)]
pub struct KernelFacts {
    pub info: KernelInfo,
    /// The parsed signature of the original kernel.
    pub signature: kt_cuda::Kernel,
    /// The original file as given.
    pub source: String,
}

/// Dependencies of the Stage 3 nodes.
pub struct Stage3Context {
    pub strategy: Strategy,
    pub kernel: KernelFacts,
    pub prompts: Arc<PromptLibrary>,
    /// `None` only where no node will run (graph export); a node that needs it says how to configure one.
    pub llm: Option<Arc<LlmClient>>,
    /// `None` only where no node will run; a node that needs it stops with "a CUDA GPU is needed".
    pub backend: Option<Arc<dyn TuningBackend>>,
    /// The run directory: candidates are written to `kernels/` inside it. `None` writes nothing (tests).
    pub run_dir: Option<PathBuf>,
    pub progress: Arc<dyn TuningProgress>,
    pub structured_mode: StructuredMode,
}

impl std::fmt::Debug for Stage3Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stage3Context")
            .field("strategy", &self.strategy.name)
            .field("kernel", &self.kernel.info.name)
            .field(
                "llm",
                &self
                    .llm
                    .as_ref()
                    .map(|l| format!("{}:{}", l.provider_name(), l.model())),
            )
            .field("backend", &self.backend.is_some())
            .field("run_dir", &self.run_dir)
            .finish()
    }
}

impl Stage3Context {
    pub fn new(strategy: Strategy, kernel: KernelFacts, prompts: Arc<PromptLibrary>) -> Self {
        Self {
            strategy,
            kernel,
            prompts,
            llm: None,
            backend: None,
            run_dir: None,
            progress: Arc::new(NoProgress),
            structured_mode: StructuredMode::Native,
        }
    }

    pub fn with_llm(mut self, llm: Arc<LlmClient>) -> Self {
        self.llm = Some(llm);
        self
    }

    pub fn with_backend(mut self, backend: Arc<dyn TuningBackend>) -> Self {
        self.backend = Some(backend);
        self
    }

    pub fn with_run_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.run_dir = Some(dir.into());
        self
    }

    pub fn with_progress(mut self, progress: Arc<dyn TuningProgress>) -> Self {
        self.progress = progress;
        self
    }

    pub fn with_structured_mode(mut self, mode: StructuredMode) -> Self {
        self.structured_mode = mode;
        self
    }

    pub(crate) fn llm(&self) -> Result<&LlmClient, PipelineError> {
        self.llm.as_deref().ok_or(PipelineError::NoLlmForStage3)
    }

    pub(crate) fn backend(&self) -> Result<&dyn TuningBackend, PipelineError> {
        self.backend.as_deref().ok_or_else(|| {
            PipelineError::Tuning(BackendError::GpuUnavailable {
                detail: "no tuning backend is configured".into(),
            })
        })
    }
}
