//! `kt inspect`: what kt-cuda's static analysis sees in a CUDA file (Stage 1's static half).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The CUDA source file to analyse.
    pub file: PathBuf,
    /// Show only this kernel (the file may hold several).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Print the analysis as JSON (schema: docs/inspect-schema.md, `schema_version` 1).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let file = args.file.display().to_string();
    let source = kt_cuda::parse_file(&args.file)?;
    let report = kt_cuda::InspectReport::new(&file, &source, args.kernel.as_deref())?;
    let text = if args.json {
        serde_json::to_string_pretty(&report).context("serialising the inspect report")? + "\n"
    } else {
        report.human()
    };
    // `kt inspect … | head` closes the pipe early: that is the reader's choice, not an error
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(ExitCode::SUCCESS),
    }
}
