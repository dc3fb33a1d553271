//! `kt fork`: copy a checkpoint to a new branch with edited fields, without running anything; `kt resume`
//! then continues from the copy. Logic lives in kt-runs.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use kt_runs::{
    FieldSet, LlmChoice, RunRecord, Setup, Stage3Binding, fork, render_text, resolve_run,
    runs_base, session_dir,
};

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// A run id (or a unique prefix of one) under the runs directory, or a run directory.
    pub run: String,
    /// The checkpoint to copy (a number from `kt debug history`, `input`, `head` or `latest`).
    #[arg(long)]
    pub at: String,
    /// FIELD=VALUE (VALUE is JSON when it parses as JSON, else a string; FIELD may be a dotted path such as
    /// best.time_ms). Repeatable.
    #[arg(long = "set")]
    pub sets: Vec<String>,
    /// FIELD=FILE: the file's text (a .json file: its JSON), e.g. best.kernel.code=faster.cu. Repeatable.
    #[arg(long = "set-file")]
    pub set_files: Vec<String>,
    /// Where runs live (default: $KT_RUNS_DIR, else ./kt-runs).
    #[arg(long)]
    pub runs_dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: ForkArgs) -> anyhow::Result<ExitCode> {
    let record = RunRecord::open_graph(
        resolve_run(&a.run, &runs_base(a.runs_dir.as_deref()))?,
        Some("stage3"),
    )?;
    let at = record.resolve(&a.at)?;
    let mut sets = a
        .sets
        .iter()
        .map(|s| FieldSet::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    for s in &a.set_files {
        sets.push(FieldSet::from_file(s)?);
    }
    if sets.is_empty() {
        anyhow::bail!(
            "nothing to change: give --set FIELD=VALUE or --set-file FIELD=FILE (`kt debug state` shows the fields)"
        );
    }
    let setup = Setup::new(LlmChoice::Replay, session_dir(&record, "fork"));
    let report = fork(&Stage3Binding::default(), &record, &setup, at, &sets)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "forked #{} to checkpoint #{} on branch b{}:",
            report.from, report.checkpoint, report.branch
        );
        print!("{}", render_text(&report.changed));
        println!(
            "`kt resume {}` continues from #{}",
            a.run, report.checkpoint
        );
    }
    Ok(ExitCode::SUCCESS)
}
