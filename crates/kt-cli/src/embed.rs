//! kt inside another program (kt's Python module): the command line from an argument list — what the
//! module runs when kt starts itself again (the GPU worker, the program Nsight Compute watches) — and
//! `kt transform` returning its run instead of printing it. Both go through the command line's own code:
//! the same arguments, defaults, checks and messages.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
pub use kt_graph::CancelToken;
use kt_pipeline::PipelineError;

use crate::cli::{Cli, Command};
use crate::commands::transform::{self, LiveView};
use crate::error_report::error_report;

/// The command line run with `args` (the subcommand first, no program name); errors are printed as the
/// `kt` binary prints them.
pub fn main_from(args: Vec<OsString>) -> ExitCode {
    let argv = std::iter::once(OsString::from("kt")).chain(args);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(err.exit_code().clamp(0, 255) as u8);
        }
    };
    crate::logging::init(cli.verbose);
    match cli.run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{}", error_report(&err));
            ExitCode::FAILURE
        }
    }
}

/// A `kt transform` that ran to its end or to a stop it was set up for (Ctrl-C, a `manual:` prompt).
#[derive(Debug, Clone)]
pub struct TransformRun {
    pub run: PathBuf,
    /// result.json's contents.
    pub result: serde_json::Value,
    /// Why the run stopped before its end and how to continue it; None when it finished.
    pub stopped: Option<String>,
    /// The stop was a cancellation (the caller's token).
    pub cancelled: bool,
    /// The best kernel's source file, when the run wrote one.
    pub best_cu: Option<PathBuf>,
}

/// Why `kt transform` returned no run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransformError {
    /// The arguments are not ones `kt transform` takes (clap's message).
    Usage(String),
    /// The run is saved and resumable, but it could not go on here: no GPU, or the LLM service is down.
    Stopped { run: PathBuf, message: String },
    /// kt's error report, as the command line prints it.
    Failed(String),
}

/// `kt transform ARGS` (the arguments after `transform`), stopped by `cancel`; `progress` shows the live
/// view on stderr.
pub fn transform(
    args: Vec<OsString>,
    cancel: CancelToken,
    progress: bool,
) -> Result<TransformRun, TransformError> {
    let argv = ["kt", "transform"]
        .into_iter()
        .map(OsString::from)
        .chain(args);
    let cli = Cli::try_parse_from(argv).map_err(|e| TransformError::Usage(e.to_string()))?;
    let Command::Transform(args) = cli.command else {
        return Err(TransformError::Usage("not a transform".into()));
    };
    if args.dry_run {
        return Err(TransformError::Usage(
            "--dry-run prints what would run; use the `kt` command for it".into(),
        ));
    }
    let failed = |e: anyhow::Error| TransformError::Failed(error_report(&e));
    let (run, outcome) =
        transform::execute(&args, move |_| Ok(cancel), LiveView::new(!progress)).map_err(failed)?;
    let stopped = |e: PipelineError, hint: String| TransformError::Stopped {
        run: run.root().to_path_buf(),
        message: format!("{e}\n{hint}"),
    };
    match outcome {
        Ok(done) => {
            let best = done.results.best_cu();
            Ok(TransformRun {
                run: run.root().to_path_buf(),
                result: serde_json::to_value(&done.result)
                    .map_err(|e| failed(anyhow::Error::new(e)))?,
                stopped: done.stopped.as_ref().map(|s| s.message(run.root())),
                cancelled: done.stopped.as_ref().is_some_and(|s| s.cancelled),
                best_cu: best.is_file().then_some(best),
            })
        }
        Err(e @ PipelineError::Tuning(_)) => {
            let hint = transform::needs_gpu_hint(&run);
            Err(stopped(e, hint))
        }
        Err(e) if e.is_llm_unavailable() => {
            let hint = transform::llm_unavailable_hint(&run);
            Err(stopped(e, hint))
        }
        Err(e) => Err(failed(transform::failed(&run, e))),
    }
}

/// Stops a run `transform` is running with `cancel`: the token, and every program the run started.
pub fn cancel(cancel: &CancelToken) {
    cancel.cancel();
    kt_sandbox::stop_all();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn arguments_transform_does_not_take_are_refused_with_clap_s_message() {
        let e = transform(vec!["--no-such-flag".into()], CancelToken::new(), false).unwrap_err();
        let TransformError::Usage(text) = e else {
            panic!("{e:?}")
        };
        assert!(text.contains("--no-such-flag"), "{text}");
    }

    #[test]
    fn a_missing_kernel_file_is_the_command_line_s_error() {
        let e = transform(vec!["/no/such.cu".into()], CancelToken::new(), false).unwrap_err();
        let TransformError::Failed(text) = e else {
            panic!("{e:?}")
        };
        assert!(
            text.starts_with("error: /no/such.cu is not a file"),
            "{text}"
        );
    }

    #[test]
    fn main_from_runs_the_command_line() {
        assert_eq!(main_from(vec!["--version".into()]), ExitCode::SUCCESS);
        assert_eq!(main_from(vec!["no-such-command".into()]), ExitCode::from(2));
    }
}
