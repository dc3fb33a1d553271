//! `kt replay`: run a recorded run again from a checkpoint, on a new branch (history is never overwritten).
//! Recorded LLM answers and tuning results are reused unless `--llm live|scripted:FILE`. Logic lives in kt-runs.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use kt_runs::{
    ContinueReport, LlmChoice, RunRecord, Setup, Stage3Binding, replay, resolve_run, runs_base,
    session_dir,
};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A run id (or a unique prefix of one) under the runs directory, or a run directory.
    pub run: String,
    /// The checkpoint to replay from (a number from `kt debug history`, or `input`).
    #[arg(long, default_value = "input")]
    pub from: String,
    /// Who answers LLM calls: replay (recorded answers and tuning results), live (the LLM the run recorded),
    /// scripted:FILE, or another PROVIDER:MODEL (which overrides the recorded one).
    #[arg(long, default_value = "replay")]
    pub llm: String,
    /// The most graph steps the replay may take.
    #[arg(long, default_value_t = 10_000)]
    pub step_limit: u64,
    /// Where runs live (default: $KT_RUNS_DIR, else ./kt-runs).
    #[arg(long)]
    pub runs_dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--llm` of replay and `debug node` as a choice; a live one says which LLM it asks (the run's recorded one,
/// or the one that overrides it) in one line on stderr.
pub(crate) fn llm_choice(spec: &str, record: &RunRecord) -> anyhow::Result<LlmChoice> {
    let choice = LlmChoice::parse(spec)?;
    let meta = record.dir().read_meta()?;
    let consent = kt_pipeline::run_llm::Consent::for_run(&meta, false);
    if let Some((config, origin)) = kt_runs::live_llm(&choice, &meta.llm, &consent)?
        && let Some(line) = origin.notice(&config.describe())
    {
        // names what run.json records: data from the run directory
        eprintln!("{}", kt_record::terminal_safe(&line));
    }
    Ok(choice)
}

pub fn run(a: ReplayArgs) -> anyhow::Result<ExitCode> {
    let record = RunRecord::open_graph(
        resolve_run(&a.run, &runs_base(a.runs_dir.as_deref()))?,
        Some("stage3"),
    )?;
    let from = record.resolve(&a.from)?;
    // Files the replayed nodes write (candidates) go beside the run's own, never over them.
    let setup = Setup::new(llm_choice(&a.llm, &record)?, session_dir(&record, "replay"));
    let rt = tokio::runtime::Runtime::new()?;
    let report = rt.block_on(replay(
        &Stage3Binding::default(),
        &record,
        &setup,
        from,
        a.step_limit,
    ))?;
    print_outcome(&report, a.json)
}

/// Prints how a replay or a continued run ended (shared wording with `kt fork`'s hint).
pub fn print_outcome(report: &ContinueReport, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(ExitCode::SUCCESS);
    }
    for p in &report.path {
        let nodes: Vec<&str> = p.nodes.iter().map(|n| n.node.as_str()).collect();
        println!(
            "#{:<4} b{:<2} {:<24} {}",
            p.checkpoint,
            p.branch,
            nodes.join(","),
            p.outcome
        );
    }
    match &report.stopped {
        Some(why) => println!(
            "stopped at #{} on branch b{}: {why}; `kt resume` continues from there",
            report.checkpoint, report.branch
        ),
        None => println!(
            "{} at #{} on branch b{}",
            report.outcome, report.checkpoint, report.branch
        ),
    }
    Ok(ExitCode::SUCCESS)
}
