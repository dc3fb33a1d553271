//! The command-line grammar and its dispatch. One variant per subcommand; each subcommand's arguments and
//! behaviour live in `commands/<name>.rs`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::commands;

#[derive(Debug, Parser)]
#[command(name = "kt", version, about = "Turn naive CUDA kernels into fast, auto-tuned kernels", long_about = None)]
#[command(propagate_version = true, arg_required_else_help = true)]
pub struct Cli {
    /// More log output (-v debug, -vv trace). KT_LOG overrides, e.g. KT_LOG=kt_tuner=trace.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check everything kt needs (CUDA driver, NVRTC, GPU, python3 + numpy, LLM endpoint, run storage).
    Doctor(commands::doctor::DoctorArgs),
    /// Show what kt sees in a CUDA file: each kernel's parameters, helpers, macros, launch assumptions.
    Inspect(commands::inspect::InspectArgs),
    /// Talk to the configured LLM directly (`kt llm ask "..."`): check a provider, a model or a schema.
    Llm(commands::llm::LlmArgs),
    /// Stage 1: what a kernel computes, its problem size, its outputs (checked against the signature); with a
    /// sidecar, where the LLM disagrees with it.
    Analyze(commands::analyze::AnalyzeArgs),
    /// Stages 1 and 2: make tests (generated inputs, expected outputs, reference times) in a run directory.
    Testgen(commands::testgen::TestgenArgs),
    /// Run, resume, report on or export to SLURM an experiment: kernels × strategies × settings × models × repeats.
    Experiment(commands::experiment::ExperimentArgs),
    /// Transform a naive kernel into a fast, tuned one (the main job).
    Transform(commands::transform::TransformArgs),
    /// Continue a stopped `kt transform` run from its last checkpoint (recorded answers and tunings are reused).
    Resume(commands::resume::ResumeArgs),
    /// Show a strategy's state graph (`kt graph export autonomous --format mermaid|dot`).
    Graph(commands::graph::GraphArgs),
    /// Recorded runs: list them, show one step by step, or write its HTML report.
    Runs(commands::runs::RunsArgs),
    /// Inside a recorded run: history, state, per-field diffs, one node run again, breakpoints.
    Debug(commands::debug::DebugArgs),
    /// Run a recorded run again from a checkpoint on a new branch (recorded answers and tunings reused).
    Replay(commands::replay::ReplayArgs),
    /// Copy a checkpoint to a new branch with edited fields (`kt resume` continues from it).
    Fork(commands::fork::ForkArgs),
    /// A local web app to watch, inspect and steer runs (`kt studio`, then open the URL it prints).
    Studio(commands::studio::StudioArgs),
    /// Tune a kernel's parameters (block sizes, tiling, …) on this GPU: compile, verify and time every configuration.
    Tune(Box<commands::tune::TuneArgs>),
    /// Check a candidate kernel against a reference on the same inputs: every output of every test.
    Verify(commands::verify::VerifyArgs),
    /// Check that kt works on this machine end to end (`kt selftest --gpu` on a GPU machine).
    Selftest(commands::selftest::SelftestArgs),
    /// The GPU worker process kt-tuner starts (internal).
    #[command(name = "__tuner-worker", hide = true)]
    TunerWorker(commands::tuner_worker::TunerWorkerArgs),
    /// One launch of a kernel for Nsight Compute to profile (internal).
    #[command(name = "__profile-launch", hide = true)]
    ProfileLaunch(commands::profile_launch::ProfileLaunchArgs),
}

impl Cli {
    /// Runs the chosen subcommand.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        use commands::*;
        match self.command {
            Command::Analyze(args) => analyze::run(args),
            Command::Doctor(args) => doctor::run(args),
            Command::Experiment(args) => experiment::run(args),
            Command::Graph(args) => graph::run(args),
            Command::Resume(args) => resume::run(args),
            Command::Runs(args) => runs::run(args),
            Command::Debug(args) => debug::run(args),
            Command::Replay(args) => replay::run(args),
            Command::Fork(args) => fork::run(args),
            Command::Studio(args) => studio::run(args),
            Command::Inspect(args) => inspect::run(args),
            Command::Llm(args) => llm::run(args),
            Command::Testgen(args) => testgen::run(args),
            Command::Transform(args) => transform::run(args),
            Command::Tune(args) => tune::run(*args),
            Command::Verify(args) => verify::run(args),
            Command::Selftest(args) => selftest::run(args),
            Command::TunerWorker(args) => tuner_worker::run(args),
            Command::ProfileLaunch(args) => profile_launch::run(args),
        }
    }
}
