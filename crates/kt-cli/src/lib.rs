//! The `kt` command line.
//!
//! This crate is wiring only: it parses arguments (clap), sets up logging, and calls into the library crates
//! (graph engine, LLM client, CUDA analysis, tuner, pipeline). Each subcommand lives in its own file under
//! `commands/`. It deliberately holds no domain logic: anything a test of behaviour would want to call belongs
//! in a library crate.

mod cli;
mod closed_pipe;
mod commands;
pub mod embed;
mod error_report;
mod logging;

use std::process::ExitCode;

use clap::Parser;

pub use cli::Cli;
use error_report::error_report;

/// Entry point of the `kt` binary. Returns the process exit code; errors are printed with their causes.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints usage for unknown commands/flags and chooses exit code 2; --help/--version exit 0.
            let _ = err.print();
            return ExitCode::from(err.exit_code().clamp(0, 255) as u8);
        }
    };
    logging::init(cli.verbose);
    closed_pipe::exit_quietly_when_stdout_is_closed();
    match cli.run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{}", error_report(&err));
            ExitCode::FAILURE
        }
    }
}
