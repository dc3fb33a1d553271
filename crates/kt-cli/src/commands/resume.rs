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
use kt_llm::{LlmClient, LlmConfig, Recorder};
use kt_pipeline::prepare::{KernelInput, Stage1Source, TestgenSettings};
use kt_pipeline::strategy::{StrategyOverrides, load_run_strategy};
use kt_pipeline::{PromptLibrary, RunDir, RunMeta};

use super::analyze::{built, runtime, stage1_from_llm};
use super::transform::{
    LiveView, NO_LLM, cancel_on_signals, claim_run, leave, report, seeded, stage3_settings,
    testgen_settings,
};

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run: its directory, or its id or a unique prefix of one (looked up under --out, $KT_RUNS_DIR or
    /// ./kt-runs).
    pub run: String,
    /// LLM for the calls not made yet, as PROVIDER:MODEL (default: the one the run recorded in run.json, with
    /// its base URL; the key comes from the environment). Naming another overrides the recorded one.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub llm: Option<String>,
    /// Wait for each whole answer instead of streaming it (for servers that do not stream).
    #[arg(long)]
    pub no_stream: bool,
    /// Where run ids are looked up (default: $KT_RUNS_DIR or ./kt-runs; `--out` is still taken).
    #[arg(long = "runs-dir", alias = "out", value_name = "DIR")]
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
    /// The id of the prompt the --answer is for (its prompt file's name without `.prompt.md`, e.g.
    /// `002-stage1.dimensions`; `kt runs show` and the stop message print it): refused when the run waits for
    /// another. Without it, an answer that is word for word an earlier prompt's answer is refused.
    #[arg(long, value_name = "ID", requires = "answer")]
    pub answer_for: Option<String>,
    /// When another kt process works on the run, wait for it to end instead of refusing.
    #[arg(long)]
    pub wait: bool,
    /// A directory holding the kernel's own `#include "…"` headers (repeatable), in place of the ones the run
    /// recorded (a run handed over from a clone at another path; recorded ones are also looked for under the
    /// current directory).
    #[arg(long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Use the LLM command (`exec:`) or server URL the run recorded although the run is not provably yours (made
    /// by another user, on another machine, or edited): kt says what it will run and where the key goes.
    #[arg(long)]
    pub trust_run: bool,
}

/// Copies `answer` to where the paused run's manual provider looks for it (kt-runs: the same operation as
/// kt studio's answer box).
fn give_answer(dir: &RunDir, answer: &std::path::Path, for_id: Option<&str>) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(answer)
        .with_context(|| format!("reading the answer {}", answer.display()))?;
    let waiting = kt_runs::answer_waiting_prompt(dir, &text, for_id)?;
    eprintln!(
        "answer to prompt `{}` (node `{}`) given from {}",
        kt_runs::prompt_id(&waiting),
        waiting.node,
        answer.display()
    );
    Ok(())
}

/// What to run instead of resuming a `kt testgen` run: it has tests, not a strategy to continue.
fn testgen_hint(dir: &RunDir, meta: &kt_pipeline::RunMeta) -> String {
    let mut words = vec![
        "kt".to_string(),
        "testgen".into(),
        shell_word(&meta.kernel_file),
        "--kernel".into(),
        shell_word(&meta.kernel),
    ];
    if let Some(n) = meta.settings.tests {
        words.extend(["--tests".into(), n.to_string()]);
    }
    if let Some(spec) = &meta.llm.spec {
        words.extend(["--llm".into(), shell_word(spec)]);
    }
    // The kernel file's own directory is searched anyway; only the others were `--include`s.
    let own = std::path::Path::new(&meta.kernel_file)
        .parent()
        .and_then(|p| std::path::absolute(p).ok());
    for d in meta.settings.include_paths() {
        if Some(&d) != own.as_ref() {
            words.extend(["--include".into(), shell_word(&d.display().to_string())]);
        }
    }
    if meta.settings.allow_unsandboxed {
        words.push("--allow-unsandboxed".into());
    }
    format!(
        "{} is a `kt testgen` run: it makes tests and has no strategy for `kt resume` to continue. On a \
         machine with a GPU, make its tests again with\n  {}\nor transform the kernel with `kt transform {}`.",
        dir.root().display(),
        words.join(" "),
        shell_word(&meta.kernel_file)
    )
}

/// `word` as one shell word (single-quoted when it holds anything a shell would split or expand).
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The LLM for the calls a resumed run has not made yet: the one it recorded unless `--llm` or `KT_LLM` names
/// another (said in one line either way), else kt.toml for runs that recorded none.
fn run_llm(
    meta: &kt_pipeline::RunMeta,
    given: Option<&str>,
    no_stream: bool,
    trust_run: bool,
) -> anyhow::Result<(LlmClient, LlmConfig)> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let consent = kt_pipeline::run_llm::Consent::for_run(meta, trust_run);
    let (config, origin) = kt_pipeline::run_llm::llm_for_run(&meta.llm, &cwd, given, &consent)?;
    // said before the client is built: what a trusted run will run or where its key goes, even when building fails
    if let Some(line) = origin.notice(&config.describe()) {
        // names what run.json records: data from the run directory
        eprintln!("{}", kt_record::terminal_safe(&line));
    }
    let Some((client, config)) = built(config, no_stream)? else {
        anyhow::bail!("{NO_LLM}");
    };
    Ok((client, config))
}

pub fn run(args: ResumeArgs) -> anyhow::Result<ExitCode> {
    let (dir, outcome) = execute(&args, cancel_on_signals, LiveView::new(args.json))?;
    report(&dir, outcome, args.json)
}

/// The resumed run, up to its end or its stop: its directory and what the pipeline returned. `cancel` gives
/// the token that stops it (the command line's: at SIGINT, SIGTERM or SIGHUP).
pub(crate) fn execute(
    args: &ResumeArgs,
    cancel: impl FnOnce(&tokio::runtime::Runtime) -> anyhow::Result<kt_graph::CancelToken>,
    view: std::sync::Arc<LiveView>,
) -> anyhow::Result<(
    RunDir,
    Result<kt_pipeline::job::TransformOutcome, kt_pipeline::PipelineError>,
)> {
    let dir = kt_runs::resolve_run(&args.run, &kt_runs::runs_base(args.out.as_deref()))?;
    let meta = dir.read_meta()?;
    let when_held = if args.wait {
        kt_pipeline::run_lock::WhenHeld::Wait
    } else {
        kt_pipeline::run_lock::WhenHeld::Refuse
    };
    if meta.strategy == "testgen" {
        if meta.status == kt_pipeline::RunStatus::Running {
            // Recorded as running, but no kt holds it (the lock is free): it was killed. Say so in the record.
            let _lock = claim_run(&dir, when_held)?;
            dir.set_status(kt_pipeline::RunStatus::Interrupted)?;
            anyhow::bail!(
                "{} was killed while it ran; it is now recorded as interrupted.\n{}",
                dir.root().display(),
                testgen_hint(&dir, &meta)
            );
        }
        anyhow::bail!("{}", testgen_hint(&dir, &meta));
    }
    let _lock = claim_run(&dir, when_held)?;
    if let Some(lost) = crate::commands::store_check::store_lost(&dir) {
        anyhow::bail!("{lost}");
    }
    if let Some(answer) = &args.answer {
        give_answer(&dir, answer, args.answer_for.as_deref())?;
    }
    let mut meta = dir.read_meta()?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    super::resume_paths::relocate(&dir, &mut meta, &args.include, &cwd)?;
    let overrides = StrategyOverrides {
        replan: meta.settings.replan,
        breakdown: meta.settings.breakdown,
        candidates: meta.settings.candidates,
    };
    let strategy = load_run_strategy(&dir, None)?.with_overrides(&overrides);
    let (client, config) = run_llm(&meta, args.llm.as_deref(), args.no_stream, args.trust_run)?;
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
        Some(earlier_stages(
            &dir,
            &meta,
            (&client, &config),
            &prompts,
            args,
        )?)
    };
    if earlier.is_none() {
        remake_missing_tests(&dir, &meta, &client, &prompts)?;
    }
    let rt = runtime()?;
    let cancel = cancel(&rt)?;
    let settings = stage3_settings(strategy, client, &config, prompts, &view, cancel);
    let outcome = match earlier {
        None => rt.block_on(kt_pipeline::job::resume(&dir, settings)),
        Some((source, stage1, testgen)) => rt.block_on(kt_pipeline::job::resume_run(
            &dir, &source, stage1, testgen, settings,
        )),
    };
    leave(rt);
    view.finish();
    Ok((dir, outcome))
}

/// A run handed over without its test arrays (they are large; manifests and generator programs travel) gets
/// them made again here, where a GPU will use them; without a GPU nothing is made (tests are made where they
/// are used) and the run goes on to its next GPU step.
fn remake_missing_tests(
    dir: &RunDir,
    meta: &RunMeta,
    client: &LlmClient,
    prompts: &std::sync::Arc<PromptLibrary>,
) -> anyhow::Result<()> {
    if !kt_pipeline::job::test_data_missing(dir) {
        return Ok(());
    }
    if let Some(reason) = kt_tuner::host::cuda_probe::gpu_missing() {
        tracing::debug!(%reason, "test data is missing and no GPU is here: it is made where it is used");
        return Ok(());
    }
    let testgen = testgen_settings(
        client,
        prompts.clone(),
        meta.settings.tests.unwrap_or(3),
        meta.settings.seed,
        meta.settings.allow_unsandboxed,
        None,
    )?;
    let remade = kt_pipeline::job::remake_test_data(dir, &testgen)?;
    if !remade.inputs.is_empty() {
        eprintln!(
            "made the inputs of {} test(s) again from their own generator programs (same seeds, same content ids)",
            remade.inputs.len()
        );
    }
    if !remade.expected.is_empty() {
        eprintln!(
            "{} test(s) get their expected outputs from the original kernel again before the next tuning",
            remade.expected.len()
        );
    }
    Ok(())
}

/// What Stages 1 and 2 of a run stopped before Stage 3 need to continue: the kernel, Stage 1's source and
/// Stage 2's settings.
fn earlier_stages(
    dir: &RunDir,
    meta: &RunMeta,
    (client, config): (&LlmClient, &LlmConfig),
    prompts: &std::sync::Arc<PromptLibrary>,
    args: &ResumeArgs,
) -> anyhow::Result<(KernelInput, Stage1Source, TestgenSettings)> {
    let original = PathBuf::from(&meta.kernel_file);
    // The original file carries the sidecar (tolerances, % of peak); input.cu is the exact copy.
    let file = if original.is_file() {
        original
    } else {
        dir.input_cu()
    };
    let source =
        KernelInput::read_with_includes(&file, Some(&meta.kernel), &meta.settings.include_paths())?;
    let stage1 = stage1_from_llm(client, config, args.prompts.as_deref())?;
    let tests = meta.settings.tests.unwrap_or(3);
    // The opt-in given to `kt transform` holds for the rest of its run.
    let testgen = testgen_settings(
        client,
        prompts.clone(),
        tests,
        meta.settings.seed,
        meta.settings.allow_unsandboxed,
        kt_tuner::host::cuda_probe::gpu_missing(),
    )?;
    Ok((source, stage1, testgen))
}
