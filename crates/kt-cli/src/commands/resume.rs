//! `kt resume RUN`: continues a stopped `kt transform` run (Ctrl-C, a breakpoint, no GPU, a crash) from its
//! last checkpoint, in whichever stage it stopped. Recorded LLM answers and tuning results are reused; only
//! what was not done yet runs. Continuing a `kt replay`/`kt fork` branch writes that branch's results to
//! `RUN/branches/b<N>/` (docs/run-format.md); exit statuses are those of `kt transform` (3: waiting for a
//! `manual:` answer, 75: the LLM service is unavailable). `--answer FILE` answers the prompt a `manual:` run
//! waits for before continuing.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use kt_llm::Recorder;
use kt_pipeline::prepare::KernelInput;
use kt_pipeline::strategy::{StrategyOverrides, load_run_strategy};
use kt_pipeline::{PromptLibrary, RunDir};

use super::analyze::{llm_client, runtime, stage1_source};
use super::transform::{
    LiveView, NO_LLM, cancel_on_signals, claim_run, leave, report, seeded, stage3_settings,
    testgen_settings,
};

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run: its directory, or its id (looked up under --out, $KT_RUNS_DIR or ./kt-runs).
    pub run: String,
    /// LLM for the calls not made yet, as PROVIDER:MODEL (default: kt.toml's [llm] section or KT_LLM).
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub llm: Option<String>,
    /// Where run ids are looked up.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Prompt templates directory.
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Print result.json instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// The answer to the prompt a `manual:` run waits for (result.json's `waiting_for`): copied to its answer
    /// file before the run continues to its next prompt or its end.
    #[arg(long, value_name = "FILE")]
    pub answer: Option<PathBuf>,
    /// When another kt process works on the run, wait for it to end instead of refusing.
    #[arg(long)]
    pub wait: bool,
}

/// Copies `answer` to where the paused run's manual provider looks for it (kt-runs: the same operation as
/// kt studio's answer box).
fn give_answer(dir: &RunDir, answer: &std::path::Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(answer)
        .with_context(|| format!("reading the answer {}", answer.display()))?;
    let waiting = kt_runs::answer_waiting_prompt(dir, &text)?;
    eprintln!(
        "answer to `{}` given from {}",
        waiting.node,
        answer.display()
    );
    Ok(())
}

fn find_run(run: &str, out: Option<&std::path::Path>) -> anyhow::Result<RunDir> {
    let as_path = PathBuf::from(run);
    if as_path.join("run.json").is_file() {
        return Ok(RunDir::open(as_path)?);
    }
    let under = RunDir::base_dir(out).join(run);
    if under.join("run.json").is_file() {
        return Ok(RunDir::open(under)?);
    }
    anyhow::bail!(
        "no run `{run}`: give a run directory (holding run.json) or a run id under {}",
        RunDir::base_dir(out).display()
    )
}

pub fn run(args: ResumeArgs) -> anyhow::Result<ExitCode> {
    let dir = find_run(&args.run, args.out.as_deref())?;
    let when_held = if args.wait {
        kt_pipeline::run_lock::WhenHeld::Wait
    } else {
        kt_pipeline::run_lock::WhenHeld::Refuse
    };
    let _lock = claim_run(&dir, when_held)?;
    if let Some(answer) = &args.answer {
        give_answer(&dir, answer)?;
    }
    let meta = dir.read_meta()?;
    let overrides = StrategyOverrides {
        replan: meta.settings.replan,
        breakdown: meta.settings.breakdown,
        candidates: meta.settings.candidates,
    };
    let strategy = load_run_strategy(&dir, None)?.with_overrides(&overrides);
    let Some((client, config)) = llm_client(args.llm.as_deref())? else {
        anyhow::bail!("{NO_LLM}");
    };
    // The calls not made yet carry the seed the run was started with.
    let (client, config) = seeded(client, config, meta.settings.seed)?;
    eprintln!(
        "resuming {} ({} strategy)",
        dir.root().display(),
        strategy.name
    );
    let client = client.with_recorder(Recorder::open(dir.llm_jsonl())?);
    let prompts = std::sync::Arc::new(PromptLibrary::locate(args.prompts.as_deref())?);
    // A run stopped during Stages 1-2 (Ctrl-C before Stage 3) continues those first, as `kt transform` would.
    let earlier = if kt_pipeline::job::stages_1_2_finished(&dir) {
        None
    } else {
        let original = PathBuf::from(&meta.kernel_file);
        // The original file carries the sidecar (tolerances, % of peak); input.cu is the exact copy.
        let file = if original.is_file() {
            original
        } else {
            dir.input_cu()
        };
        let source = KernelInput::read_with_includes(
            &file,
            Some(&meta.kernel),
            &meta.settings.include_paths(),
        )?;
        let llm_pair = (client.clone(), config.clone());
        let stage1 = stage1_source(
            false,
            Some(&llm_pair),
            args.prompts.as_deref(),
            kt_pipeline::stage1::DEFAULT_ATTEMPTS,
        )?;
        let tests = meta.settings.tests.unwrap_or(3);
        // The opt-in given to `kt transform` holds for the rest of its run.
        let testgen = testgen_settings(
            &client,
            prompts.clone(),
            tests,
            meta.settings.seed,
            meta.settings.allow_unsandboxed,
        )?;
        Some((source, stage1, testgen))
    };
    let rt = runtime()?;
    let cancel = cancel_on_signals(&rt)?;
    let view = LiveView::new(args.json);
    let settings = stage3_settings(strategy, client, &config, prompts, &view, cancel);
    let outcome = match earlier {
        None => rt.block_on(kt_pipeline::job::resume(&dir, settings)),
        Some((source, stage1, testgen)) => rt.block_on(kt_pipeline::job::resume_run(
            &dir, &source, stage1, testgen, settings,
        )),
    };
    leave(rt);
    view.finish();
    report(&dir, outcome, args.json)
}
