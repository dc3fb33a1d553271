//! `kt transform FILE`: the main job. Stages 1 and 2 (what the kernel means, tests), then the chosen strategy
//! (Stage 3) with a live view of the graph's current node and a progress bar while tuning. Ctrl-C leaves a
//! resumable run; so does a machine without a GPU (the run goes as far as it can and says what is missing).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use kt_graph::{CancelToken, Event, EventKind};
use kt_llm::{LlmClient, LlmConfig, Recorder};
use kt_pipeline::job::{Stage3Settings, TransformOutcome, tuner_backend};
use kt_pipeline::prepare::{KernelInput, TestgenSettings};
use kt_pipeline::stage2::{ReferenceRunner, Stage2Options, Unavailable};
use kt_pipeline::stage3::TuningProgress;
use kt_pipeline::strategy::{Strategy, StrategyOverrides, load_strategy};
use kt_pipeline::{NewRun, PipelineError, PromptLibrary, RunDir, RunSettings};
use kt_sandbox::PythonRuntime;

use super::analyze::{llm_client, runtime, stage1_from_llm};

#[derive(Debug, Args)]
pub struct TransformArgs {
    /// The CUDA source file holding the naive kernel.
    pub file: PathBuf,
    /// Strategy: one-prompt, explicit, autonomous (or a path to a strategy .toml).
    #[arg(long, default_value = DEFAULT_STRATEGY)]
    pub strategy: String,
    /// Kernel to transform when the file holds several.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Autonomous: how many times to replan when the plan runs out (default: the strategy file's).
    #[arg(long)]
    pub replan: Option<u32>,
    /// Autonomous: how deep a step may be broken down into sub-steps; 0 turns breakdown off.
    #[arg(long)]
    pub breakdown: Option<u32>,
    /// Variants asked for per step, in parallel; the best verified one is kept (best-of-N).
    #[arg(long)]
    pub candidates: Option<u32>,
    /// Number of generated tests, at least 1 (different seeds; at least one size not a multiple of 32).
    #[arg(long, alias = "tests-count", value_name = "N", default_value_t = DEFAULT_TESTS,
          value_parser = super::tests_flag::count::<u32>)]
    pub tests: u32,
    /// LLM as PROVIDER:MODEL (openai:gpt-4.1, anthropic:claude-sonnet-4, replay:CASSETTE.jsonl,
    /// scripted:ANSWERS.toml); default: kt.toml's [llm] section or KT_LLM.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub llm: Option<String>,
    /// Wait for each whole answer instead of streaming it (for servers that do not stream; `stream = false`
    /// in kt.toml's [llm] section).
    #[arg(long)]
    pub no_stream: bool,
    /// Where to create the run directory (default: $KT_RUNS_DIR or ./kt-runs; `--out` is still taken).
    #[arg(long = "runs-dir", alias = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Prompt templates directory (default: KT_PROMPTS_DIR, a prompts/ directory above, else built in).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Seed for everything random in the run: the LLM's sampling seed (providers that take one), Stage 2's
    /// test seeds (seed, seed+1, ...) and the tuner's search seed. Recorded in run.json and result.json.
    #[arg(long, env = "KT_SEED", value_name = "N")]
    pub seed: Option<u64>,
    /// Run LLM-written generator programs even where no network namespace can be made (they can then reach the
    /// network); also `[sandbox] allow_unsandboxed = true` in kt.toml. Without it kt refuses on such machines.
    #[arg(long)]
    pub allow_unsandboxed: bool,
    /// A directory to look for the kernel file's `#include "…"` headers in (repeatable); the file's own
    /// directory is always searched first. Recorded in run.json, so `kt resume` uses the same.
    #[arg(long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Print result.json instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Check the kernel, its sidecar, the strategy and the LLM configuration and say what would run, without
    /// a GPU and without contacting the LLM: exit 0, or 2 on bad input.
    #[arg(long)]
    pub dry_run: bool,
}

/// `--strategy` when none is given.
pub const DEFAULT_STRATEGY: &str = "autonomous";
/// `--tests` when none is given.
pub const DEFAULT_TESTS: u32 = 3;

/// The message for a machine with no LLM configured.
pub(crate) const NO_LLM: &str = "kt transform needs an LLM and none is configured. Either pass \
    --llm PROVIDER:MODEL (e.g. --llm openai:gpt-4.1 with OPENAI_API_KEY set, --llm anthropic:claude-sonnet-4 with \
    ANTHROPIC_API_KEY, or --llm replay:experiments/cassettes/matmul-autonomous.jsonl to replay a recorded run \
    without a key), or add to kt.toml:\n\n[llm]\nprovider = \"openai\"\nmodel = \"gpt-4.1\"\n";

/// The client with the run's seed applied to its requests (kt-pipeline's `llm_seed` says which seed).
pub(crate) fn seeded(
    client: LlmClient,
    mut config: LlmConfig,
    seed: Option<u64>,
) -> anyhow::Result<(LlmClient, LlmConfig)> {
    let wanted = kt_pipeline::seed::llm_seed(&config, seed);
    if wanted == config.seed {
        return Ok((client, config));
    }
    config.seed = wanted;
    Ok((config.build_client()?, config))
}

/// Live view: the graph's current node on a spinner line, and a progress bar while a candidate is tuned.
pub(crate) struct LiveView {
    bar: indicatif::ProgressBar,
}

impl LiveView {
    pub(crate) fn new(hidden: bool) -> Arc<Self> {
        let bar = if hidden {
            indicatif::ProgressBar::hidden()
        } else {
            indicatif::ProgressBar::new_spinner()
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {msg} {bar:25} {pos}/{len}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.set_message("stages 1-2: understanding the kernel and making its tests");
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Arc::new(Self { bar })
    }

    pub(crate) fn on_event(&self, event: &Event) {
        match &event.kind {
            EventKind::NodeStarted {
                node,
                index,
                attempt,
            } => {
                let mut msg = format!("stage 3: {node}");
                if *index > 0 {
                    msg.push_str(&format!(" #{index}"));
                }
                if *attempt > 1 {
                    msg.push_str(&format!(" (attempt {attempt})"));
                }
                self.bar.set_length(0);
                self.bar.set_position(0);
                self.bar
                    .set_message(kt_record::terminal_safe(&msg).into_owned());
            }
            EventKind::NodeFailed {
                node,
                attempt,
                error,
                will_retry,
                ..
            } => {
                let first_line = error.lines().next().unwrap_or_default();
                let next = if *will_retry {
                    "sent back to the LLM"
                } else {
                    "giving up"
                };
                // the error may quote an LLM's answer or a generator's output
                self.bar.println(kt_record::terminal_safe(&format!(
                    "  {node}, attempt {attempt}: {first_line} ({next})"
                )));
            }
            _ => {}
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl TuningProgress for LiveView {
    fn update(&self, label: &str, done: u64, total: u64) {
        self.bar.set_message(
            kt_record::terminal_safe(&format!("stage 3: tuning {label}")).into_owned(),
        );
        self.bar.set_length(total);
        self.bar.set_position(done);
    }
}

/// Stage 2's reference runs need a GPU runner this build does not have; Stage 3 then checks every candidate
/// against the original kernel directly, so the run loses nothing but the tests' stored expected outputs.
fn reference_runner() -> Arc<dyn ReferenceRunner> {
    let reason = if kt_tuner::host::cuda_probe::driver_present() {
        "expected outputs are computed in Stage 3 from the original kernel".to_string()
    } else {
        "no CUDA driver on this machine (libcuda.so.1 not found)".to_string()
    };
    Arc::new(Unavailable { reason })
}

/// The strategy with the command line's overrides, or a clear error.
pub(crate) fn strategy_with(name: &str, overrides: StrategyOverrides) -> anyhow::Result<Strategy> {
    Ok(load_strategy(name, None)?.with_overrides(&overrides))
}

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP cancel the run at once: the programs it runs are killed, the step in
/// flight (an LLM call, a generator, a tuning job) is abandoned, the last checkpoint stays, and `kt resume`
/// continues from it (see [`super::interrupt`]). A second signal exits at once.
pub(crate) fn cancel_on_signals(rt: &tokio::runtime::Runtime) -> anyhow::Result<CancelToken> {
    super::interrupt::cancel_on_signals(rt).context("listening for SIGINT, SIGTERM and SIGHUP")
}

/// Exit status of a run paused at a `manual:` provider's prompt (`kt resume RUN --answer FILE` continues).
pub(crate) const EXIT_AWAITING_ANSWER: u8 = 3;

/// Exit status of a run the LLM service's outage stopped (EX_TEMPFAIL: try again later).
pub(crate) const EXIT_LLM_UNAVAILABLE: u8 = 75;

/// Leaves the runtime without waiting for blocking work still running on it (a tuning job or a generator
/// abandoned at Ctrl-C would otherwise hold the exit until it ends).
pub(crate) fn leave(rt: tokio::runtime::Runtime) {
    rt.shutdown_background();
    super::interrupt::clean_up_after_signal();
}

/// Takes the run's lock (one writer per run) and removes what a killed earlier process left: sandbox work
/// directories of dead kt processes, the run's half-written records and half-built tests.
pub(crate) fn claim_run(
    run: &RunDir,
    when_held: kt_pipeline::run_lock::WhenHeld,
) -> anyhow::Result<kt_pipeline::run_lock::RunLock> {
    let lock = kt_pipeline::run_lock::RunLock::acquire(run.root(), when_held)?;
    kt_sandbox::remove_stale_workdirs();
    kt_record::atomic_write::remove_stale_temporaries(run.root());
    kt_sandbox::generator::remove_stale_staging(&run.tests_dir());
    Ok(lock)
}

/// What Stage 2 runs with in `kt transform` and in a `kt resume` that still has Stage 2 to do.
/// Stage 2's settings. `gpu_missing` is asked before Stage 2 makes data (`cuda_probe::gpu_missing`): a run
/// that will stop for want of a GPU makes its tests where they are used.
pub(crate) fn testgen_settings(
    client: &LlmClient,
    prompts: Arc<PromptLibrary>,
    tests: u32,
    seed: Option<u64>,
    allow_unsandboxed: bool,
    gpu_missing: Option<String>,
) -> anyhow::Result<TestgenSettings> {
    Ok(TestgenSettings {
        llm: Some(client.clone()),
        prompts,
        script: None,
        options: Stage2Options {
            tests: tests.max(1) as usize,
            first_seed: seed.unwrap_or(Stage2Options::default().first_seed),
            ..Stage2Options::default()
        },
        sandbox: super::unsandboxed::generator_sandbox(allow_unsandboxed)?,
        python: PythonRuntime::find_or_provision()?,
        reference: reference_runner(),
        gpu_missing,
    })
}

pub(crate) fn stage3_settings(
    strategy: Strategy,
    client: LlmClient,
    config: &LlmConfig,
    prompts: Arc<PromptLibrary>,
    view: &Arc<LiveView>,
    cancel: CancelToken,
) -> Stage3Settings {
    let sink = view.clone();
    Stage3Settings {
        strategy,
        llm: Arc::new(client),
        prompts,
        mode: config.structured_mode.unwrap_or_default(),
        backend: Arc::new(tuner_backend),
        progress: view.clone(),
        events: Some(Arc::new(move |e: &Event| sink.on_event(e))),
        cancel,
    }
}

/// What `kt transform` checks before a run directory exists.
struct Checked {
    strategy: Strategy,
    client: LlmClient,
    config: LlmConfig,
    source: KernelInput,
    kernel_name: String,
}

/// The strategy with its overrides, the LLM client (built, not contacted) and the kernel.
fn check_inputs(args: &TransformArgs) -> anyhow::Result<Checked> {
    // Refused rather than raised to 1: run.json records what was asked, and it must be what was made.
    if args.tests == 0 {
        anyhow::bail!(
            "--tests must be at least 1: every candidate is verified on the generated tests (default 3)"
        );
    }
    if !args.file.is_file() {
        anyhow::bail!(
            "{} is not a file: give the path of a .cu source holding a __global__ kernel",
            args.file.display()
        );
    }
    let overrides = StrategyOverrides {
        replan: args.replan,
        breakdown: args.breakdown,
        candidates: args.candidates,
    };
    let strategy = strategy_with(&args.strategy, overrides)?;
    let Some((client, config)) = llm_client(args.llm.as_deref(), args.no_stream)? else {
        anyhow::bail!("{NO_LLM}");
    };
    let (client, config) = seeded(client, config, args.seed)?;
    // A whole program (host code, other kernels, user headers) is worked on as its kernel's own unit; the
    // file itself is never changed, and best_program.cu puts the result back into a copy of it.
    let source =
        KernelInput::read_with_includes(&args.file, args.kernel.as_deref(), &args.include)?;
    let kernel_name = source.kernel_name()?;
    Ok(Checked {
        strategy,
        client,
        config,
        source,
        kernel_name,
    })
}

/// `--dry-run`: the checks of a real run up to its run directory, and the sidecar read; what would run.
fn dry_run(args: &TransformArgs) -> anyhow::Result<String> {
    let checked = check_inputs(args)?;
    let sidecar = kt_cuda::Sidecar::path_for(&args.file);
    let sidecar_line = if sidecar.is_file() {
        kt_cuda::Sidecar::load(&sidecar)?;
        // checked against the kernel's signature as `kt tune` checks it (names, dtypes, size expressions)
        kt_tuner::input::load_kernel(&args.file, args.kernel.as_deref(), &args.include)
            .with_context(|| {
                format!("the sidecar {} does not fit the kernel", sidecar.display())
            })?;
        format!("sidecar: {} (read and checked)", sidecar.display())
    } else {
        "sidecar: none (Stage 1 asks the LLM what the kernel computes)".to_string()
    };
    let s = &checked.strategy;
    Ok([
        format!(
            "kernel: `{}` of {}",
            checked.kernel_name,
            args.file.display()
        ),
        sidecar_line,
        format!(
            "strategy: {} (replan {}, breakdown {}, candidates {})",
            s.name,
            s.settings.max_replans,
            s.breakdown_limit(),
            s.settings.candidates
        ),
        format!(
            "LLM: {} {} (configured, not contacted)",
            checked.client.provider_name(),
            checked.client.model()
        ),
        format!(
            "tests: {} generated{}",
            args.tests,
            args.seed
                .map(|s| format!(", seeds from {s}"))
                .unwrap_or_default()
        ),
        format!(
            "run directory: a new one under {}",
            RunDir::base_dir(args.out.as_deref()).display()
        ),
        "dry run: nothing written, no LLM asked, no GPU used".to_string(),
    ]
    .join("\n"))
}

pub fn run(args: TransformArgs) -> anyhow::Result<ExitCode> {
    if args.dry_run {
        return Ok(super::dry_run::report(dry_run(&args)));
    }
    let (run, outcome) = execute(&args, cancel_on_signals, LiveView::new(args.json))?;
    let code = report(&run, outcome, args.json);
    tracing::debug!("the summary is printed");
    code
}

/// The run, up to its end or its stop: its directory and what the pipeline returned. `cancel` gives the
/// token that stops it (the command line's: at SIGINT, SIGTERM or SIGHUP).
pub(crate) fn execute(
    args: &TransformArgs,
    cancel: impl FnOnce(&tokio::runtime::Runtime) -> anyhow::Result<CancelToken>,
    view: Arc<LiveView>,
) -> anyhow::Result<(RunDir, Result<TransformOutcome, PipelineError>)> {
    // The driver's start (most of a second) overlaps checking the inputs and preparing the sandbox.
    let gpu_probe = std::thread::spawn(kt_tuner::host::cuda_probe::gpu_missing);
    let Checked {
        strategy,
        client,
        config,
        source,
        kernel_name,
    } = check_inputs(args)?;
    // The first profile (the naive kernel's, which the plan prompt waits for) needs ncu and its program
    // started: begun now, its start overlaps Stages 1 and 2 (the baseline waits for whatever is left of it).
    let takes_profiles = strategy.settings.takes_profiles();
    let early = if takes_profiles && kt_tuner::host::cuda_probe::driver_present() {
        kt_pipeline::job::start_profile_standby(&kernel_name)
    } else {
        kt_pipeline::stage3::EarlyTuner::default()
    };
    // Found (or provisioned) before the run exists: a machine without Python or a safe sandbox gets no half-made
    // run.
    let generators = super::unsandboxed::generator_sandbox(args.allow_unsandboxed)?;
    super::unsandboxed::warn_if_unsandboxed(&generators);
    PythonRuntime::find_or_provision()?;
    let run = RunDir::create(
        &RunDir::base_dir(args.out.as_deref()),
        NewRun {
            kernel_file: &args.file,
            kernel: &kernel_name,
            strategy: &strategy.name,
            settings: RunSettings {
                replan: Some(strategy.settings.max_replans),
                breakdown: Some(strategy.breakdown_limit()),
                candidates: Some(strategy.settings.candidates),
                tests: Some(args.tests),
                seed: args.seed,
                allow_unsandboxed: args.allow_unsandboxed,
                include_dirs: source.include_dirs_for_record(),
            },
            llm: kt_pipeline::run_llm::recorded_llm(&client, &config),
        },
    )?;
    let _lock = claim_run(&run, kt_pipeline::run_lock::WhenHeld::Refuse)?;
    eprintln!("run directory: {}", run.root().display());
    let client = client.with_recorder(Recorder::open(run.llm_jsonl())?);
    let stage1 = stage1_from_llm(&client, &config, args.prompts.as_deref())?;
    let prompts = Arc::new(PromptLibrary::locate(args.prompts.as_deref())?);
    let gpu_missing = gpu_probe
        .join()
        .unwrap_or_else(|_| Some("the check for a GPU failed unexpectedly".into()));
    let testgen = testgen_settings(
        &client,
        prompts.clone(),
        args.tests,
        args.seed,
        args.allow_unsandboxed,
        gpu_missing,
    )?;
    let rt = runtime()?;
    let cancel = cancel(&rt)?;
    let mut settings = stage3_settings(strategy, client, &config, prompts, &view, cancel);
    if testgen.gpu_missing.is_none() {
        // the tuner's worker and CUDA context start while Stages 1 and 2 run
        settings.backend = kt_pipeline::job::tuner_backend_with(
            kt_pipeline::job::start_early_tuner(&run, early, &kernel_name, takes_profiles),
        );
    }
    let outcome = rt.block_on(kt_pipeline::job::transform(
        &run, &source, stage1, testgen, settings,
    ));
    tracing::debug!("the pipeline returned");
    leave(rt);
    view.finish();
    tracing::debug!("the runtime and the live view are closed");
    Ok((run, outcome))
}

/// What a run that stopped for want of a GPU says after the tuner's message.
pub(crate) fn needs_gpu_hint(run: &RunDir) -> String {
    format!(
        "Stages up to this point are saved in {}; on a machine with an NVIDIA GPU, continue with:\n  kt resume {}",
        run.root().display(),
        run.root().display()
    )
}

/// What a run the LLM service's outage stopped says after the error.
pub(crate) fn llm_unavailable_hint(run: &RunDir) -> String {
    format!(
        "The run is saved in {} (status llm_unavailable); once the LLM service answers again, continue with:\n  kt resume {}",
        run.root().display(),
        run.root().display()
    )
}

/// How a run that failed outright is reported: the error, and where what it did is.
pub(crate) fn failed(run: &RunDir, e: PipelineError) -> anyhow::Error {
    anyhow::Error::new(e).context(format!(
        "kt transform stopped; what it did is in {} (report.md, result.json)",
        run.root().display()
    ))
}

/// Prints the summary (or result.json) and picks the exit code; a stopped run says how to continue it.
pub(crate) fn report(
    run: &RunDir,
    outcome: Result<TransformOutcome, PipelineError>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match outcome {
        Ok(done) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&done.result)?);
            } else {
                print_summary(&done);
            }
            // A stop is not an error: the run is saved, and the message says how to continue it.
            match &done.stopped {
                Some(stop) => {
                    eprintln!("{}", stop.message(run.root()));
                    Ok(if stop.cancelled {
                        ExitCode::from(super::interrupt::exit_code())
                    } else if stop.waiting.is_some() {
                        ExitCode::from(EXIT_AWAITING_ANSWER)
                    } else {
                        ExitCode::SUCCESS
                    })
                }
                None => Ok(ExitCode::SUCCESS),
            }
        }
        Err(PipelineError::Tuning(e)) => {
            eprintln!("{e}");
            eprintln!("{}", needs_gpu_hint(run));
            if json {
                print_result_json(run)?;
            }
            Ok(ExitCode::from(2))
        }
        Err(e) if e.is_llm_unavailable() => {
            eprintln!("{e}");
            eprintln!("{}", llm_unavailable_hint(run));
            Ok(ExitCode::from(EXIT_LLM_UNAVAILABLE))
        }
        Err(e) => Err(failed(run, e)),
    }
}

/// `--json` on a run that stopped without an outcome: the result.json it wrote (status, `needs_gpu`, error),
/// so a script reads the same shape whichever way the run ended.
fn print_result_json(run: &RunDir) -> anyhow::Result<()> {
    let path = run.result_json();
    match std::fs::read_to_string(&path) {
        Ok(text) => println!("{}", text.trim_end()),
        Err(e) => anyhow::bail!("--json: reading {}: {e}", path.display()),
    }
    Ok(())
}

fn print_summary(done: &TransformOutcome) {
    let r = &done.result;
    println!(
        "kernel {} — strategy {} — {:?}",
        r.kernel, r.strategy, r.status
    );
    for (i, s) in r.steps.iter().enumerate() {
        let t = s
            .time_ms
            .map(|t| format!("{t:.4} ms"))
            .unwrap_or_else(|| "-".into());
        println!(
            "  {:>2}. {:<12} {:>12}  {}",
            i + 1,
            s.status.to_string(),
            t,
            s.name
        );
    }
    match (r.naive_time_ms, r.best_time_ms) {
        (Some(n), Some(b)) => {
            let basis = r.time_basis.as_deref().unwrap_or("sum over the tests");
            println!("naive {n:.4} ms -> best {b:.4} ms ({basis})");
            print!("{}", kt_pipeline::job::gains_markdown(r).replace("**", ""));
        }
        _ => println!("no timing"),
    }
    if let Some(o) = r.outcome {
        println!(
            "outcome: {} (correct: {})",
            serde_json::to_value(o)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            r.correct
        );
    }
    if let Some(p) = r.percent_of_peak {
        println!(
            "{p:.1}% of peak (of the theoretical ceiling that binds the kernel: HBM bandwidth from memory clock and bus width, or the FP32 rate)"
        );
    }
    if !r.best_params.is_empty() {
        let params: Vec<String> = r
            .best_params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!("best parameters: {}", params.join(" "));
    }
    println!(
        "LLM: {} tokens in, {} out, cost {}; wall {:.1} s (stage 3: {:.1} s)",
        r.tokens_in,
        r.tokens_out,
        r.cost_usd
            .map(|c| format!("${c:.4}"))
            .unwrap_or_else(|| "unknown".into()),
        r.wall_time_s.total,
        r.wall_time_s.stage3
    );
    if let Some(branch) = done.results.branch() {
        println!("results of branch {branch} (the main branch's stay in the run directory)");
    }
    // a run stopped before any kernel (a manual: prompt, a breakpoint) has no best.cu: name none
    let best = done.results.best_cu();
    if best.is_file() {
        println!("best kernel: {}", best.display());
    } else {
        println!("best kernel: none yet (the run stopped before one was accepted)");
    }
    if r.best_program.is_some() {
        println!(
            "your program with the best kernel: {} (your file is unchanged)",
            done.results.best_program_cu().display()
        );
    }
    println!("report: {}", done.results.report_md().display());
}
