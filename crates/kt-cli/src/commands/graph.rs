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
    /// The strategy, or a run (id or directory): a run's graph is drawn with the path it took highlighted.
    pub strategy: String,
    #[arg(long, value_enum, default_value_t = Format::Mermaid)]
    pub format: Format,
    /// Highlight the path this run (id or directory) took through the strategy's graph.
    #[arg(long, value_name = "RUN")]
    pub highlight: Option<String>,
    /// Where run ids are looked up (default: $KT_RUNS_DIR, else ./kt-runs).
    #[arg(long, value_name = "DIR")]
    pub runs_dir: Option<std::path::PathBuf>,
    /// Print {"format", "diagram"} as JSON.
    #[arg(long)]
    pub json: bool,
}

fn emit(a: &ExportArgs, diagram: &str) -> anyhow::Result<ExitCode> {
    if a.json {
        let format = match a.format {
            Format::Mermaid => "mermaid",
            Format::Dot => "dot",
        };
        println!(
            "{}",
            serde_json::json!({"format": format, "diagram": diagram})
        );
    } else {
        print!("{diagram}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: GraphArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        GraphCommand::Export(a) => {
            if let Some(run) = highlighted_run(&a)? {
                return export_run(&a, &run);
            }
            let strategy = load_strategy(&a.strategy, None)?;
            let format = match a.format {
                Format::Mermaid => GraphFormat::Mermaid,
                Format::Dot => GraphFormat::Dot,
            };
            emit(&a, &export_graph(strategy, format)?)
        }
    }
}

/// The run whose path to highlight: `--highlight RUN`, or the positional argument when it names a run rather
/// than a strategy.
fn highlighted_run(a: &ExportArgs) -> anyhow::Result<Option<kt_pipeline::RunDir>> {
    let base = kt_runs::runs_base(a.runs_dir.as_deref());
    if let Some(run) = &a.highlight {
        let dir = kt_runs::resolve_run(run, &base)?;
        let ran = dir.read_meta()?.strategy;
        let named = std::path::Path::new(&a.strategy)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string());
        if named.as_deref() != Some(ran.as_str()) {
            anyhow::bail!(
                "run {} used the {ran} strategy, not {}: export `{ran}` to highlight it",
                dir.run_id(),
                a.strategy
            );
        }
        return Ok(Some(dir));
    }
    if load_strategy(&a.strategy, None).is_ok() {
        return Ok(None);
    }
    Ok(kt_runs::resolve_run(&a.strategy, &base).ok())
}

/// The run's own graph (rebuilt from its directory) with the path to its recorded end highlighted.
fn export_run(a: &ExportArgs, dir: &kt_pipeline::RunDir) -> anyhow::Result<ExitCode> {
    let record = kt_runs::RunRecord::open(dir.clone())?;
    let setup = kt_runs::Setup::new(
        kt_runs::LlmChoice::Replay,
        kt_runs::session_dir(&record, "export"),
    );
    let format = match a.format {
        Format::Mermaid => kt_runs::GraphFormat::Mermaid,
        Format::Dot => kt_runs::GraphFormat::Dot,
    };
    let head = record.head()?;
    let diagram = kt_runs::export(
        &kt_runs::Stage3Binding::default(),
        &record,
        &setup,
        format,
        Some(head),
    )?;
    emit(a, &diagram)
}
