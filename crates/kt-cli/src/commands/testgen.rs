//! `kt testgen FILE`: Stages 1 and 2. Makes a run directory with `kernel_info.json` and `tests/` (inputs from
//! a generator program run in the sandbox, expected outputs and reference times from the original kernel on
//! the GPU). `--script GEN.py` runs a hand-written generator through the same harness without an LLM.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use kt_llm::{LlmClient, LlmConfig, Recorder};
use kt_pipeline::prepare::{KernelInput, Prepared, Stage1Source, TestgenSettings, prepare};
use kt_pipeline::stage2::{
    ReferenceRunner, Stage2Options, TimeBounds, TunerReference, Unavailable,
};
use kt_pipeline::{NewRun, PipelineError, PromptLibrary, RunDir, RunLlm, RunSettings, RunStatus};
use kt_sandbox::{PythonRuntime, Sandbox};

use super::analyze::{
    llm_client, print_disagreements, print_info, runtime, stage1_source, understood_json,
};

#[derive(Debug, Args)]
pub struct TestgenArgs {
    /// The CUDA source file holding the kernel.
    pub file: PathBuf,
    /// The kernel when the file holds several.
    #[arg(long)]
    pub kernel: Option<String>,
    /// How many tests to make (different seeds; at least one has sizes that are not multiples of 32).
    #[arg(
        short = 'n',
        long = "tests",
        alias = "tests-count",
        value_name = "N",
        default_value_t = 3,
        value_parser = super::tests_flag::count::<usize>
    )]
    pub tests: usize,
    /// LLM as PROVIDER:MODEL (openai:gpt-4.1, scripted:experiments/scripted/matmul.toml, ...); default:
    /// kt.toml / KT_LLM.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub llm: Option<String>,
    /// Wait for each whole answer instead of streaming it (for servers that do not stream; `stream = false`
    /// in kt.toml's [llm] section).
    #[arg(long)]
    pub no_stream: bool,
    /// A hand-written generator (`def generate(seed: int) -> list`) to use instead of asking the LLM.
    #[arg(long, value_name = "GEN.py")]
    pub script: Option<PathBuf>,
    /// Take Stage 1 from the kernel's sidecar (FILE.toml) instead of asking an LLM.
    #[arg(long)]
    pub info_from_sidecar: bool,
    /// Where to create the run directory (default: $KT_RUNS_DIR or ./kt-runs; `--out` is still taken).
    #[arg(long = "runs-dir", alias = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Shortest acceptable run time of the original kernel on a test, in milliseconds.
    #[arg(long, default_value_t = TimeBounds::default().min_ms)]
    pub min_ms: f64,
    /// Longest acceptable run time of the original kernel on a test, in milliseconds.
    #[arg(long, default_value_t = TimeBounds::default().max_ms)]
    pub max_ms: f64,
    /// Seed of the first test (test i uses seed + i).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Largest total size of one test's arguments, in MiB.
    #[arg(long, default_value_t = 4096)]
    pub max_total_mib: u64,
    /// How many times one question or one generator may be asked again after a refusal or failure.
    #[arg(long, default_value_t = kt_pipeline::stage1::DEFAULT_ATTEMPTS)]
    pub attempts: u32,
    /// Prompt templates directory (default: KT_PROMPTS_DIR, a prompts/ directory above, else built in).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Run LLM-written generator programs even where no network namespace can be made (they can then reach the
    /// network); also `[sandbox] allow_unsandboxed = true` in kt.toml. Without it kt refuses on such machines.
    #[arg(long)]
    pub allow_unsandboxed: bool,
    /// A directory to look for the kernel file's `#include "…"` headers in (repeatable); the file's own
    /// directory is always searched first.
    #[arg(long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The reference runner of this machine: kt-tuner's worker when a CUDA driver is present (it says itself when
/// no GPU answers), else one that makes Stage 2 write the tests' inputs and say why it stopped there.
fn reference_runner(run: &RunDir, source: &KernelInput) -> Arc<dyn ReferenceRunner> {
    if kt_tuner::host::cuda_probe::driver_present() {
        Arc::new(
            TunerReference::new(run.tuning_dir()).with_include_dirs(source.include_dirs.clone()),
        )
    } else {
        Arc::new(Unavailable {
            reason: "no CUDA driver on this machine (libcuda.so.1 not found)".into(),
        })
    }
}

pub fn run(args: TestgenArgs) -> anyhow::Result<ExitCode> {
    check_args(&args)?;
    let source =
        KernelInput::read_with_includes(&args.file, args.kernel.as_deref(), &args.include)?;
    let script = match &args.script {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the generator {}", path.display()))?,
        ),
        None => None,
    };
    let mut llm = testgen_llm(&args, script.is_some())?;
    let sandbox = super::unsandboxed::generator_sandbox(args.allow_unsandboxed)?;
    super::unsandboxed::warn_if_unsandboxed(&sandbox);
    let python = PythonRuntime::find_or_provision()?;
    let run = create_run(&args, &source, llm.as_ref())?;
    let _lock = super::transform::claim_run(&run, kt_pipeline::run_lock::WhenHeld::Refuse)?;
    if let Some((client, _)) = llm.as_mut() {
        *client = client
            .clone()
            .with_recorder(Recorder::open(run.llm_jsonl())?);
    }
    let stage1 = stage1_source(
        args.info_from_sidecar,
        llm.as_ref(),
        args.prompts.as_deref(),
        args.attempts,
    )?;
    let settings = settings_of(&args, &run, &source, script, llm.as_ref(), sandbox, python)?;
    let Some(result) = run_stages(&run, &source, stage1, settings)? else {
        run.set_status(RunStatus::Interrupted)?;
        eprintln!(
            "kt testgen was interrupted; the run is in {} (status interrupted); tests finished so far are in \
             its tests/ directory. Run kt testgen again for the rest.",
            run.root().display()
        );
        return Ok(ExitCode::from(super::interrupt::exit_code()));
    };
    let prepared = match result {
        Ok(p) => p,
        Err(err) => {
            run.set_status(RunStatus::Failed)?;
            return Err(anyhow::Error::new(err).context(format!(
                "kt testgen failed; what it did is in {}",
                run.root().display()
            )));
        }
    };
    report(&run, &prepared, args.json, !args.info_from_sidecar)?;
    if let Some(reason) = &prepared.tests.expected_missing {
        run.set_status(RunStatus::Failed)?;
        return Err(PipelineError::NoGpu {
            reason: reason.clone(),
        }
        .into());
    }
    run.set_status(RunStatus::Finished)?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses flags that cannot make tests: no tests asked for, or time bounds that leave no room.
fn check_args(args: &TestgenArgs) -> anyhow::Result<()> {
    if args.tests == 0 {
        anyhow::bail!("--tests must be at least 1");
    }
    if !(args.min_ms > 0.0 && args.min_ms < args.max_ms) {
        anyhow::bail!(
            "--min-ms must be positive and below --max-ms (got {} and {})",
            args.min_ms,
            args.max_ms
        );
    }
    Ok(())
}

/// The LLM, where one is needed: for Stage 1 unless the sidecar answers it, for Stage 2 unless a script is
/// given (`has_script`).
fn testgen_llm(
    args: &TestgenArgs,
    has_script: bool,
) -> anyhow::Result<Option<(LlmClient, LlmConfig)>> {
    let needs_llm = !args.info_from_sidecar || !has_script;
    let llm = if needs_llm {
        llm_client(args.llm.as_deref(), args.no_stream)?
    } else {
        None
    };
    if !has_script && llm.is_none() {
        anyhow::bail!(
            "Stage 2 needs an LLM to write the input generator: pass --llm PROVIDER:MODEL, or --script GEN.py \
             with a hand-written `def generate(seed: int) -> list`"
        );
    }
    Ok(llm)
}

/// The run directory of this `kt testgen`, with its settings and LLM recorded.
fn create_run(
    args: &TestgenArgs,
    source: &KernelInput,
    llm: Option<&(LlmClient, LlmConfig)>,
) -> anyhow::Result<RunDir> {
    let kernel_name = source.kernel_name()?;
    Ok(RunDir::create(
        &RunDir::base_dir(args.out.as_deref()),
        NewRun {
            kernel_file: &args.file,
            kernel: &kernel_name,
            strategy: "testgen",
            settings: RunSettings {
                tests: Some(args.tests as u32),
                allow_unsandboxed: args.allow_unsandboxed,
                include_dirs: source.include_dirs_for_record(),
                ..RunSettings::default()
            },
            llm: match llm {
                Some((client, config)) => kt_pipeline::run_llm::recorded_llm(client, config),
                None => RunLlm::none(),
            },
        },
    )?)
}

/// Stage 2's settings: the LLM unless a hand-written generator is used as written, the prompts, the options,
/// the sandbox and Python, and this machine's reference runner.
fn settings_of(
    args: &TestgenArgs,
    run: &RunDir,
    source: &KernelInput,
    script: Option<String>,
    llm: Option<&(LlmClient, LlmConfig)>,
    sandbox: Sandbox,
    python: PythonRuntime,
) -> anyhow::Result<TestgenSettings> {
    Ok(TestgenSettings {
        // A hand-written generator is used as written: no LLM rewrites, resizes or fixes it.
        llm: if script.is_some() {
            None
        } else {
            llm.map(|(c, _)| c.clone())
        },
        prompts: Arc::new(PromptLibrary::locate(args.prompts.as_deref())?),
        script,
        options: stage2_options(args),
        sandbox,
        python,
        reference: reference_runner(run, source),
        // The tests are what `kt testgen` is for: their inputs are written even without a GPU.
        gpu_missing: None,
    })
}

/// Stage 2's options from the flags.
fn stage2_options(args: &TestgenArgs) -> Stage2Options {
    Stage2Options {
        tests: args.tests,
        first_seed: args.seed,
        bounds: TimeBounds {
            min_ms: args.min_ms,
            max_ms: args.max_ms,
        },
        attempts: args.attempts,
        max_total_bytes: args.max_total_mib << 20,
        ..Stage2Options::default()
    }
}

/// Stages 1 and 2; None when a signal abandoned them (the generator in flight is already killed, see
/// `interrupt`).
fn run_stages(
    run: &RunDir,
    source: &KernelInput,
    stage1: Stage1Source,
    settings: TestgenSettings,
) -> anyhow::Result<Option<Result<Prepared, PipelineError>>> {
    let rt = runtime()?;
    let cancel = super::transform::cancel_on_signals(&rt)?;
    let result = rt.block_on(async {
        tokio::select! {
            result = prepare(run, source, stage1, settings) => Some(result),
            () = cancel.cancelled() => None,
        }
    });
    super::transform::leave(rt);
    Ok(result)
}

fn report(run: &RunDir, p: &Prepared, json: bool, compared: bool) -> anyhow::Result<()> {
    let t = &p.tests;
    if json {
        let mut value = understood_json(&p.understood);
        value["run_dir"] = serde_json::json!(run.root());
        value["tests_dir"] = serde_json::json!(t.tests_dir);
        value["tests"] = serde_json::to_value(&t.tests)?;
        value["warnings"] = serde_json::json!(t.warnings);
        value["expected_missing"] = serde_json::json!(t.expected_missing);
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    print_info(&p.understood.stage1.info);
    print_disagreements(&p.understood, compared);
    println!();
    println!("{} tests in {}:", t.tests.len(), t.tests_dir.display());
    for test in &t.tests {
        let size = test
            .problem_size
            .map(|s| format!("{}x{}x{}", s[0], s[1], s[2]))
            .unwrap_or_else(|| "?".into());
        let time = match test.reference_time_ms {
            Some(ms) => format!("{ms:.3} ms"),
            None => "no expected outputs yet".into(),
        };
        let tail = if test.tail { ", tail" } else { "" };
        println!(
            "  {}  seed {}  size {size}{tail}  {time}",
            test.id, test.seed
        );
    }
    for w in &t.warnings {
        // a warning may quote a generator's output
        println!("warning: {}", kt_record::terminal_safe(&w.to_string()));
    }
    println!("run directory: {}", run.root().display());
    Ok(())
}
