//! `kt transform`: the main job. The strategies (Stage 3) are not wired in yet; until they are, this command
//! accepts its full argument list and fails with a message that says so, rather than pretending to work.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct TransformArgs {
    /// The CUDA source file holding the naive kernel.
    pub file: PathBuf,
    /// Which strategy to run: one-prompt, explicit or autonomous.
    #[arg(long, default_value = "autonomous")]
    pub strategy: String,
    /// Kernel to transform when the file holds several.
    #[arg(long)]
    pub kernel: Option<String>,
    /// How many times the autonomous strategy may replan when its plan runs out.
    #[arg(long)]
    pub replan: Option<u32>,
    /// How many times a step may be broken down into sub-steps.
    #[arg(long)]
    pub breakdown: Option<u32>,
    /// Variants asked for per step (best-of-N).
    #[arg(long)]
    pub candidates: Option<u32>,
    /// Number of generated tests.
    #[arg(long)]
    pub tests: Option<u32>,
    /// LLM as PROVIDER:MODEL (e.g. openai:gpt-4.1, anthropic:claude-sonnet-4, replay:CASSETTE).
    #[arg(long)]
    pub llm: Option<String>,
    /// Where to put the run directory (default: ./kt-runs).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: TransformArgs) -> anyhow::Result<ExitCode> {
    if !args.file.is_file() {
        anyhow::bail!("{} is not a file: give the path of a .cu source holding a __global__ kernel", args.file.display());
    }
    anyhow::bail!(
        "`kt transform` is not available in this build yet: the {} strategy (Stage 3) has not landed. \
         `kt doctor` checks the machine meanwhile.",
        args.strategy
    )
}
