//! `run.json`: what a run is (its kernel, strategy, settings and LLM), where it stands, and what it ran on.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::gpu::GpuRecord;
use crate::protections::Protections;
use crate::run_llm::RunLlm;
use crate::run_status::RunStatus;

/// The settings a run was started with. Stage 3 knobs are absent (null) for runs that do not transform.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub replan: Option<u32>,
    pub breakdown: Option<u32>,
    pub candidates: Option<u32>,
    pub tests: Option<u32>,
    /// `kt transform --seed` (or `KT_SEED`): the LLM's sampling seed, Stage 2's first test seed and the
    /// tuner's search seed. Absent in runs made before it existed and in runs started without one.
    #[serde(default)]
    pub seed: Option<u64>,
    /// `--allow-unsandboxed`: generated programs may run without a network namespace. `kt resume` honours it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unsandboxed: bool,
    /// Where the kernel file's `#include "…"` headers are looked up: its own directory, then `--include`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_dirs: Vec<String>,
}

impl RunSettings {
    /// [`Self::include_dirs`] as paths.
    pub fn include_paths(&self) -> Vec<PathBuf> {
        self.include_dirs.iter().map(PathBuf::from).collect()
    }
}

/// `run.json`: written at start, updated at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub run_id: String,
    pub kernel_file: String,
    pub kernel: String,
    pub strategy: String,
    pub settings: RunSettings,
    pub llm: RunLlm,
    pub status: RunStatus,
    /// RFC 3339, UTC.
    pub started: String,
    pub finished: Option<String>,
    pub kt_version: String,
    /// The sandbox protections generated programs ran under (recorded when Stage 2 starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Protections>,
    /// Who made the run, sealed (see [`crate::provenance`]): a recorded `exec:` command or base URL is used
    /// without `--trust-run` only when it checks out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::provenance::Provenance>,
    /// The GPU the run's kernels ran on (recorded when the tuner first reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuRecord>,
    /// blake3 of each prompt template the run had (name → hash), recorded with the strategy's snapshot
    /// (`strategy.toml`) when the run started.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub prompt_hashes: std::collections::BTreeMap<String, String>,
}

/// A question the `manual` provider wrote and that has no answer yet: the run is paused at it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingAnswer {
    /// The LLM call's node label (`stage1.describe`, `stage3.apply`, ...).
    pub node: String,
    /// The prompt to answer.
    pub prompt_file: PathBuf,
    /// Where the answer goes (`kt resume RUN --answer FILE` copies FILE there).
    pub answer_file: PathBuf,
}

impl WaitingAnswer {
    /// The prompt's id: its file's name without `.prompt.md` (`002-stage1.dimensions`), unique in its prompt
    /// directory (`kt resume --answer-for ID`, kt studio's answer box).
    pub fn id(&self) -> String {
        let name = self
            .prompt_file
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        name.strip_suffix(".prompt.md").unwrap_or(&name).to_string()
    }
}
