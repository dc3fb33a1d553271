//! `kt graph export STRATEGY`: the strategy's state graph as a mermaid or DOT diagram (exactly the nodes and
//! declared routes the run can take).

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use kt_pipeline::stage3::{GraphFormat, export_graph};
use kt_pipeline::strategy::load_strategy;

#[derive(Debug, Args)]
pub struct GraphArgs {
    #[command(subcommand)]
    pub command: GraphCommand,
}

#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Print a strategy's graph (one-prompt, explicit, autonomous, or a strategy .toml).
    Export(ExportArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Mermaid,
    Dot,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The strategy.
    pub strategy: String,
    #[arg(long, value_enum, default_value_t = Format::Mermaid)]
    pub format: Format,
}

pub fn run(args: GraphArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        GraphCommand::Export(a) => {
            let strategy = load_strategy(&a.strategy, None)?;
            let format = match a.format {
                Format::Mermaid => GraphFormat::Mermaid,
                Format::Dot => GraphFormat::Dot,
            };
            print!("{}", export_graph(strategy, format)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
