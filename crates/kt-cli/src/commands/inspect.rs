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
    /// Print the kernel's compilation unit instead: the device-only source kt compiles (the kernel with the
    /// helpers, types, macros, constants and includes it uses; no host code). With --json, its item list too.
    #[arg(long)]
    pub unit: bool,
    /// A directory to look for `#include`d headers in (after the file's own directory); repeatable.
    #[arg(long = "include", value_name = "DIR")]
    pub include_dirs: Vec<PathBuf>,
}

pub fn run(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let file = kt_cuda::SourceFile::load(&args.file, &args.include_dirs)?;
    let source = kt_cuda::parse_source_file(&file)?;
    let text = if args.unit {
        let kernel = source.select_kernel_in(args.kernel.as_deref(), &file.name)?;
        let unit = kt_cuda::extract_unit(&file, &kernel.name)?;
        if args.json {
            serde_json::to_string_pretty(&unit).context("serialising the unit")? + "\n"
        } else {
            unit.text
        }
    } else if args.json {
        let report = kt_cuda::InspectReport::for_file(&file, &source, args.kernel.as_deref())?;
        serde_json::to_string_pretty(&report).context("serialising the inspect report")? + "\n"
    } else {
        kt_cuda::InspectReport::new(&file.name, &source, args.kernel.as_deref())?.human()
    };
    // `kt inspect … | head` closes the pipe early: that is the reader's choice, not an error
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("writing to stdout"),
        _ => Ok(ExitCode::SUCCESS),
    }
}
