//! One module per subcommand. `run` dispatches; each module exposes `<Name>Args` and `run(args)`.

pub mod doctor;
pub mod transform;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Doctor(args) => doctor::run(args),
        Command::Transform(args) => transform::run(args),
    }
}
