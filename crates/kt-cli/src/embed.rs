//! kt inside another program (kt's Python module): the command line from an argument list — what the
//! module's `kt` console command and the processes kt starts itself as (the GPU worker, the program Nsight
//! Compute watches) run — and `kt transform` and `kt resume` from typed options, returning their run instead
//! of printing it. Both go through the commands' own code: the same defaults, checks and messages.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
pub use kt_graph::CancelToken;
use kt_pipeline::PipelineError;
use kt_pipeline::RunDir;
use kt_pipeline::job::TransformOutcome;

use crate::cli::Cli;
use crate::commands::resume::{self, ResumeArgs};
use crate::commands::transform::{self, LiveView, TransformArgs};
use crate::error_report::error_report;

/// The command line run with `args` (the subcommand first, no program name); errors are printed as the
/// `kt` binary prints them. Returns the exit status the `kt` binary would exit with.
pub fn main_from(args: Vec<OsString>) -> u8 {
    let argv = std::iter::once(OsString::from("kt")).chain(args);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return err.exit_code().clamp(0, 255) as u8;
        }
    };
    crate::logging::init(cli.verbose);
    match cli.run() {
        Ok(code) => exit_status(code),
        Err(err) => {
            eprintln!("{}", error_report(&err));
            1
        }
    }
}

/// The number behind an [`ExitCode`] (the standard library keeps it private).
fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|n| ExitCode::from(*n) == code)
        .unwrap_or(1)
}

/// `kt transform`'s settings as typed values (what `kt.transform` takes); None, false or empty: the command's
/// default.
#[derive(Debug, Clone, Default)]
pub struct TransformOptions {
    pub file: PathBuf,
    pub strategy: Option<String>,
    pub kernel: Option<String>,
    pub replan: Option<u32>,
    pub breakdown: Option<u32>,
    pub candidates: Option<u32>,
    pub tests: Option<u32>,
    pub llm: Option<String>,
    pub no_stream: bool,
    pub runs_dir: Option<PathBuf>,
    pub prompts: Option<PathBuf>,
    /// None: `KT_SEED` when set, as on the command line.
    pub seed: Option<u64>,
    pub allow_unsandboxed: bool,
    pub include: Vec<PathBuf>,
}

impl TransformOptions {
    fn into_args(self) -> Result<TransformArgs, TransformError> {
        let seed = match self.seed {
            Some(s) => Some(s),
            None => seed_from_env()?,
        };
        Ok(TransformArgs {
            file: self.file,
            strategy: self
                .strategy
                .unwrap_or_else(|| transform::DEFAULT_STRATEGY.into()),
            kernel: self.kernel,
            replan: self.replan,
            breakdown: self.breakdown,
            candidates: self.candidates,
            tests: self.tests.unwrap_or(transform::DEFAULT_TESTS),
            llm: self.llm,
            no_stream: self.no_stream,
            out: self.runs_dir,
            prompts: self.prompts,
            seed,
            allow_unsandboxed: self.allow_unsandboxed,
            include: self.include,
            json: false,
            dry_run: false,
        })
    }
}

/// `KT_SEED`, which the command line reads for `--seed`.
fn seed_from_env() -> Result<Option<u64>, TransformError> {
    match std::env::var("KT_SEED") {
        Ok(v) if !v.trim().is_empty() => v.trim().parse().map(Some).map_err(|_| {
            TransformError::Usage(format!(
                "KT_SEED={v} is not a seed (a whole number); unset it or give seed="
            ))
        }),
        _ => Ok(None),
    }
}

/// `kt resume`'s settings as typed values (what `kt.resume` takes).
#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    /// The run: its directory, or its id or a unique prefix of one.
    pub run: String,
    pub llm: Option<String>,
    pub no_stream: bool,
    pub runs_dir: Option<PathBuf>,
    pub prompts: Option<PathBuf>,
    pub answer: Option<PathBuf>,
    pub answer_for: Option<String>,
    pub include: Vec<PathBuf>,
    pub wait: bool,
    pub trust_run: bool,
}

impl ResumeOptions {
    fn into_args(self) -> Result<ResumeArgs, TransformError> {
        if self.answer_for.is_some() && self.answer.is_none() {
            return Err(TransformError::Usage(
                "answer_for names the prompt an answer is for: give the answer too".into(),
            ));
        }
        Ok(ResumeArgs {
            run: self.run,
            llm: self.llm,
            no_stream: self.no_stream,
            out: self.runs_dir,
            prompts: self.prompts,
            json: false,
            answer: self.answer,
            answer_for: self.answer_for,
            include: self.include,
            wait: self.wait,
            trust_run: self.trust_run,
        })
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

/// `kt transform` with `options`, stopped by `cancel`; `progress` shows the live view on stderr.
pub fn transform(
    options: TransformOptions,
    cancel: CancelToken,
    progress: bool,
) -> Result<TransformRun, TransformError> {
    let args = options.into_args()?;
    let executed = transform::execute(&args, move |_| Ok(cancel), LiveView::new(!progress));
    finish(executed)
}

/// `kt resume` with `options`, stopped by `cancel`; `progress` shows the live view on stderr.
pub fn resume(
    options: ResumeOptions,
    cancel: CancelToken,
    progress: bool,
) -> Result<TransformRun, TransformError> {
    let args = options.into_args()?;
    let executed = resume::execute(&args, move |_| Ok(cancel), LiveView::new(!progress));
    finish(executed)
}

/// The run a command executed, or why there is none, as the command line would have reported it.
fn finish(
    executed: anyhow::Result<(RunDir, Result<TransformOutcome, PipelineError>)>,
) -> Result<TransformRun, TransformError> {
    let failed = |e: anyhow::Error| TransformError::Failed(error_report(&e));
    let (run, outcome) = executed.map_err(failed)?;
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
    fn a_missing_kernel_file_is_the_command_line_s_error() {
        let options = TransformOptions {
            file: "/no/such.cu".into(),
            ..TransformOptions::default()
        };
        let e = transform(options, CancelToken::new(), false).unwrap_err();
        let TransformError::Failed(text) = e else {
            panic!("{e:?}")
        };
        assert!(
            text.starts_with("error: /no/such.cu is not a file"),
            "{text}"
        );
    }

    #[test]
    fn typed_options_take_the_command_s_defaults() {
        let args = TransformOptions {
            file: "k.cu".into(),
            seed: Some(7),
            ..TransformOptions::default()
        }
        .into_args()
        .unwrap();
        let parsed = Cli::try_parse_from(["kt", "transform", "k.cu", "--seed", "7"]).unwrap();
        let crate::cli::Command::Transform(parsed) = parsed.command else {
            panic!("not a transform")
        };
        assert_eq!(format!("{args:?}"), format!("{parsed:?}"));
    }

    #[test]
    fn a_resume_of_a_run_that_is_not_there_says_where_it_looked() {
        let options = ResumeOptions {
            run: "no-such-run".into(),
            runs_dir: Some("/nonexistent-runs".into()),
            ..ResumeOptions::default()
        };
        let e = resume(options, CancelToken::new(), false).unwrap_err();
        let TransformError::Failed(text) = e else {
            panic!("{e:?}")
        };
        assert!(
            text.contains("no run `no-such-run`") && text.contains("/nonexistent-runs"),
            "{text}"
        );
        let e = ResumeOptions {
            answer_for: Some("001-stage1.describe".into()),
            ..ResumeOptions::default()
        }
        .into_args()
        .unwrap_err();
        assert!(matches!(e, TransformError::Usage(_)), "{e:?}");
    }

    #[test]
    fn main_from_returns_the_command_line_s_exit_status() {
        assert_eq!(main_from(vec!["--version".into()]), 0);
        assert_eq!(main_from(vec!["no-such-command".into()]), 2);
        assert_eq!(exit_status(ExitCode::from(75)), 75);
    }
}
