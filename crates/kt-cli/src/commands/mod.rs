//! One module per subcommand. `run` dispatches; each module exposes `<Name>Args` and `run(args)`.

pub mod analyze;
pub mod debug;
pub mod doctor;
pub mod experiment;
pub mod fork;
pub mod graph;
pub mod inspect;
pub mod llm;
pub mod replay;
pub mod resume;
pub mod runs;
pub mod selftest;
pub mod testgen;
pub mod transform;
pub mod tune;
pub mod tuner_worker;
pub mod verify;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Analyze(args) => analyze::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Experiment(args) => experiment::run(args),
        Command::Graph(args) => graph::run(args),
        Command::Resume(args) => resume::run(args),
        Command::Runs(args) => runs::run(args),
        Command::Debug(args) => debug::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Fork(args) => fork::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Llm(args) => llm::run(args),
        Command::Testgen(args) => testgen::run(args),
        Command::Transform(args) => transform::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Selftest(args) => selftest::run(args),
        Command::TunerWorker(args) => tuner_worker::run(args),
    }
}
