//! `kt runs`: list the recorded runs, show one step by step, or write its HTML report. Logic lives in kt-runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use kt_runs::{
    ReportInputs, RunRecord, RunShow, format_duration, list_runs, render_html, resolve_run,
    runs_base, show_dir,
};

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: RunsCommand,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Every run: id, kernel, strategy, model, status, best speedup, start and duration.
    List(ListArgs),
    /// One run step by step: node, outcome, time, tokens; then the accepted and rejected kernels.
    Show(ShowArgs),
    /// Write a self-contained HTML page of a run (graph with the path taken, timeline, prompts and answers,
    /// kernel diffs, tuning tables, speedup chart).
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Where runs live (default: $KT_RUNS_DIR, else ./kt-runs).
    #[arg(long)]
    pub runs_dir: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A run id (or a unique prefix of one) under the runs directory, or a run directory.
    pub run: String,
    /// Where runs live (default: $KT_RUNS_DIR, else ./kt-runs).
    #[arg(long)]
    pub runs_dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run id (or a unique prefix of one) under the runs directory, or a run directory.
    pub run: String,
    /// Write HTML (the only format so far; required so that later formats stay explicit).
    #[arg(long, required = true)]
    pub html: bool,
    /// Output file (default: RUN/report.html).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Where runs live (default: $KT_RUNS_DIR, else ./kt-runs).
    #[arg(long)]
    pub runs_dir: Option<PathBuf>,
    /// Print where the report went as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: RunsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        RunsCommand::List(a) => list(a),
        RunsCommand::Show(a) => show_run(a),
        RunsCommand::Report(a) => report(a),
    }
}

fn list(a: ListArgs) -> anyhow::Result<ExitCode> {
    let base = runs_base(a.runs_dir.as_deref());
    let runs = list_runs(&base)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        println!("no runs under {}", base.display());
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<52} {:<18} {:<11} {:<22} {:<11} {:>8} {:<20} {:>8}",
        "ID", "KERNEL", "STRATEGY", "MODEL", "STATUS", "SPEEDUP", "STARTED", "DURATION"
    );
    for r in runs {
        println!(
            "{:<52} {:<18} {:<11} {:<22} {:<11} {:>8} {:<20} {:>8}",
            r.id,
            r.kernel,
            r.strategy,
            r.model,
            r.status_text(),
            r.speedup
                .map(|s| format!("{s:.2}x"))
                .unwrap_or_else(|| "-".into()),
            r.started.chars().take(19).collect::<String>(),
            r.duration_s
                .map(format_duration)
                .unwrap_or_else(|| "-".into()),
        );
        if let Some(p) = r.problem {
            println!("    ({p})");
        } else if r.needs_gpu {
            println!(
                "    (stopped where a CUDA GPU is needed: `kt resume {}` on a GPU machine continues it)",
                r.id
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show_run(a: ShowArgs) -> anyhow::Result<ExitCode> {
    let dir = resolve_run(&a.run, &runs_base(a.runs_dir.as_deref()))?;
    let s = show_dir(dir)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_summary(&s);
    if s.path.is_empty() {
        println!("\n(no graph history: the run stopped before its first graph step)");
        return Ok(ExitCode::SUCCESS);
    }
    print_path(&s);
    print_kernels(&s);
    Ok(ExitCode::SUCCESS)
}

/// The head of `kt runs show`: what ran, how it ended, its gains and where it stopped.
fn print_summary(s: &RunShow) {
    let m = &s.summary;
    println!("run       {}", m.id);
    println!(
        "kernel    {}   strategy {}   model {}",
        m.kernel, m.strategy, m.model
    );
    println!(
        "status    {}   speedup {}   started {}   duration {} (active time, summed over attempts)",
        m.status_text(),
        m.speedup
            .map(|v| format!("{v:.2}x"))
            .unwrap_or_else(|| "-".into()),
        m.started,
        m.duration_s
            .map(format_duration)
            .unwrap_or_else(|| "-".into())
    );
    if let (Some(sp), Some(g)) = (m.speedup, m.gain) {
        println!(
            "gains     speedup t_naive/t_best {sp:.2}x (objective, summed over the tests){}   gain (t_naive - t_best)/t_naive {:.1}%   outcome {}",
            m.speedup_ci95
                .map(|[lo, hi]| format!(
                    "; final timing on one test: 95% interval {lo:.2}x to {hi:.2}x"
                ))
                .unwrap_or_default(),
            g * 100.0,
            m.outcome.map_or("-", |o| o.as_str())
        );
    }
    if let Some(prompt) = &m.waiting_for {
        let id = std::path::Path::new(prompt)
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .trim_end_matches(".prompt.md")
                    .to_string()
            })
            .unwrap_or_default();
        println!(
            "waiting   for an answer to {prompt}: `kt resume {} --answer FILE --answer-for {id}`",
            m.id
        );
    }
    if let Some(stop) = &s.stopped {
        println!("stopped   {stop}");
    }
    if let Some(e) = &s.error {
        println!("error     {e}");
    }
    for line in kt_runs::profile_lines(&s.profiles, m.duration_s) {
        println!("{line}");
    }
}

/// The graph path: one line per checkpoint.
fn print_path(s: &RunShow) {
    println!("\npath ({}):", s.graph_run);
    println!(
        "{:>5} {:>5}  {:<28} {:>9} {:>13}  OUTCOME",
        "CP", "STEP", "NODE(S)", "TIME", "TOKENS IN/OUT"
    );
    for p in &s.path {
        let nodes = p.node_labels();
        let secs = p.seconds();
        println!(
            "{:>5} {:>5}  {:<28} {:>8.3}s {:>13}  {}",
            format!("#{}", p.checkpoint),
            p.step,
            if nodes.is_empty() {
                format!("({})", p.source)
            } else {
                nodes.join(",")
            },
            secs,
            format!("{}/{}", p.tokens_in, p.tokens_out),
            p.outcome
        );
    }
}

/// The kernels the run wrote, with their status and time.
fn print_kernels(s: &RunShow) {
    if s.kernels.is_empty() {
        return;
    }
    println!("\nkernels:");
    for k in &s.kernels {
        println!(
            "  {:<12} {:<36} {:>10}  {}{}",
            k.status,
            k.step,
            k.time_ms.map(|t| format!("{t:.4} ms")).unwrap_or_default(),
            k.reason,
            k.kernel_file
                .as_ref()
                .map(|f| format!("  [{f}]"))
                .unwrap_or_default()
        );
    }
}

fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let dir = resolve_run(&a.run, &runs_base(a.runs_dir.as_deref()))?;
    let record = RunRecord::open(dir)?;
    // The graph is the shape the run saved (graph.json); a run recorded before it draws the path alone.
    let inputs = ReportInputs::collect(&record, None)?;
    let html = render_html(&inputs);
    let out = a.out.unwrap_or_else(|| record.root().join("report.html"));
    std::fs::write(&out, html).with_context(|| format!("writing {}", out.display()))?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"report": out, "run": inputs.summary.id})
        );
    } else {
        println!("wrote {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}
