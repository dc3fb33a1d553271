//! [`GraphBinding`]: what this crate needs from whoever owns a run's graph, to run something of it again — a
//! node, a replay, a fork, a resume. Reading a run never needs it (see [`crate::record`]).
//!
//! A binding rebuilds the run's compiled graph with the dependencies a debugging session chooses: who answers
//! LLM calls (with capture and prompt override, see [`crate::capture`]) and where nodes write files, which is
//! never the recorded run's own files (a replayed step numbering its kernels like the original would overwrite
//! them).

use std::path::PathBuf;
use std::sync::Arc;

use kt_graph::{CompiledGraph, State};
use kt_llm::LlmClient;
use kt_pipeline::RunDir;
use serde_json::Value;

use crate::capture::{CallLog, CapturedCall, LlmChoice, debug_client};
use crate::error::RunsError;

/// The dependencies of one debugging session.
#[derive(Debug, Clone)]
pub struct Setup {
    pub llm: LlmChoice,
    /// Replaces the first LLM prompt the node sends.
    pub prompt_override: Option<String>,
    /// Where nodes write files (candidates, caches).
    pub output_dir: PathBuf,
    /// Every call made, as sent.
    pub calls: CallLog,
}

impl Setup {
    pub fn new(llm: LlmChoice, output_dir: impl Into<PathBuf>) -> Self {
        Self {
            llm,
            prompt_override: None,
            output_dir: output_dir.into(),
            calls: CallLog::default(),
        }
    }

    /// The LLM client nodes should use in this session (capturing, with the override).
    pub fn client(&self, run: &RunDir) -> Result<Arc<LlmClient>, RunsError> {
        // Only a live choice asks the LLM the run recorded; a run.json that cannot be read leaves it unknown.
        let meta = run.read_meta();
        let recorded = meta.as_ref().map(|m| m.llm.clone()).unwrap_or_default();
        // no --trust-run here: a recorded command or server of a run not provably the user's is refused, and
        // `--llm PROVIDER:MODEL` names one instead
        let consent = match &meta {
            Ok(m) => kt_pipeline::run_llm::Consent::for_run(m, false),
            Err(e) => kt_pipeline::run_llm::Consent {
                ours: Err(format!("its run.json cannot be read: {e}")),
                trust_run: false,
            },
        };
        debug_client(
            &self.llm,
            &run.llm_jsonl(),
            &recorded,
            &consent,
            self.prompt_override.clone(),
            &self.calls,
        )
    }
}

/// Rebuilds a run's graph. Implemented for kt's Stage 3 by [`crate::Stage3Binding`]; tests bind their own.
pub trait GraphBinding: Send + Sync {
    type State: State;

    /// The run's graph, with nodes wired to `setup`'s dependencies.
    fn build(&self, run: &RunDir, setup: &Setup) -> Result<CompiledGraph<Self::State>, RunsError>;

    /// The prompts and answers behind a node's update when no call went out (replayed from the journal):
    /// found in the run's recording. Default: none known.
    fn recorded_calls(&self, _run: &RunDir, _update: &[(&str, Value)]) -> Vec<CapturedCall> {
        Vec::new()
    }

    /// Tuning results inside a node's update, for display. Default: none.
    fn tuning_results(&self, _update: &[(&str, Value)]) -> Vec<Value> {
        Vec::new()
    }
}
