//! The command-line grammar. One variant per subcommand; each subcommand's arguments and behaviour live in
//! `commands/<name>.rs`.

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
    /// Transform a naive kernel into a fast, tuned one (the main job).
    Transform(commands::transform::TransformArgs),
}
