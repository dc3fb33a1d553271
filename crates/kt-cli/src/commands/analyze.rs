//! `kt analyze FILE`: Stage 1 only. Prints what kt learned about the kernel (its `KernelInfo`) and, for a
//! suite kernel, where the LLM's answers disagree with the sidecar.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use kt_llm::{LlmClient, LlmConfig, Recorder};
use kt_pipeline::prepare::{KernelInput, Stage1Source, Understood, analyze_file};
use kt_pipeline::{KernelInfo, PromptLibrary};

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The CUDA source file holding the kernel.
    pub file: PathBuf,
    /// The kernel to analyze when the file holds several.
    #[arg(long)]
    pub kernel: Option<String>,
    /// LLM as PROVIDER:MODEL (openai:gpt-4.1, scripted:experiments/scripted/matmul.toml, replay:llm.jsonl);
    /// default: kt.toml / KT_LLM.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub llm: Option<String>,
    /// Wait for each whole answer instead of streaming it (for servers that do not stream; `stream = false`
    /// in kt.toml's [llm] section).
    #[arg(long)]
    pub no_stream: bool,
    /// Take the facts from the kernel's sidecar (FILE.toml) instead of asking an LLM.
    #[arg(long)]
    pub info_from_sidecar: bool,
    /// Prompt templates directory (default: KT_PROMPTS_DIR, a prompts/ directory above the current one, else
    /// the templates built into kt).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// How many times one question may be asked when its answer is refused.
    #[arg(long, default_value_t = kt_pipeline::stage1::DEFAULT_ATTEMPTS)]
    pub attempts: u32,
    /// Append every LLM call to this llm.jsonl record.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Print the KernelInfo and the sidecar disagreements as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The LLM from kt.toml / `KT_LLM` / `--llm` (with `KT_LLM_BASE_URL` in force either way), or None when
/// nothing is configured. `no_stream` asks for whole answers (`--no-stream`).
pub(crate) fn llm_client(
    spec: Option<&str>,
    no_stream: bool,
) -> anyhow::Result<Option<(LlmClient, LlmConfig)>> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let config = LlmConfig::load_with(&cwd, spec, None)?;
    built(config, no_stream)
}

/// The client of `config` (None when it names no provider), with `--no-stream` applied.
pub(crate) fn built(
    mut config: LlmConfig,
    no_stream: bool,
) -> anyhow::Result<Option<(LlmClient, LlmConfig)>> {
    if no_stream {
        config.stream = Some(false);
    }
    if !config.is_configured() {
        return Ok(None);
    }
    let client = config.build_client()?;
    Ok(Some((client, config)))
}

/// How Stage 1 is answered: the sidecar when asked, else the LLM (an error naming both ways when neither).
pub(crate) fn stage1_source(
    info_from_sidecar: bool,
    llm: Option<&(LlmClient, LlmConfig)>,
    prompts: Option<&Path>,
    attempts: u32,
) -> anyhow::Result<Stage1Source> {
    if info_from_sidecar {
        return Ok(Stage1Source::Sidecar);
    }
    let Some((client, config)) = llm else {
        return Err(kt_pipeline::PipelineError::NoLlm.into());
    };
    Ok(Stage1Source::Llm {
        llm: client.clone(),
        prompts: Arc::new(PromptLibrary::locate(prompts)?),
        mode: config.structured_mode.unwrap_or_default(),
        attempts,
    })
}

/// Stage 1 asked of the run's LLM (`client` with its `config`), prompts from `prompts` or built in.
pub(crate) fn stage1_from_llm(
    client: &LlmClient,
    config: &LlmConfig,
    prompts: Option<&Path>,
) -> anyhow::Result<Stage1Source> {
    let llm = (client.clone(), config.clone());
    stage1_source(
        false,
        Some(&llm),
        prompts,
        kt_pipeline::stage1::DEFAULT_ATTEMPTS,
    )
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

pub fn run(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let source = KernelInput::read(&args.file, args.kernel.as_deref())?;
    let mut llm = if args.info_from_sidecar {
        None
    } else {
        llm_client(args.llm.as_deref(), args.no_stream)?
    };
    if let (Some((client, _)), Some(path)) = (llm.as_mut(), &args.record) {
        *client = client.clone().with_recorder(Recorder::open(path)?);
    }
    let how = stage1_source(
        args.info_from_sidecar,
        llm.as_ref(),
        args.prompts.as_deref(),
        args.attempts,
    )?;
    let understood = runtime()?.block_on(analyze_file(&source, how))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&understood_json(&understood))?
        );
    } else {
        print_info(&understood.stage1.info);
        print_disagreements(
            &understood,
            source.sidecar.is_some() && !args.info_from_sidecar,
        );
    }
    if let Some((client, _)) = &llm {
        let t = client.totals().run;
        tracing::info!(
            calls = t.calls,
            tokens_in = t.input_tokens,
            tokens_out = t.output_tokens,
            "LLM usage"
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn understood_json(u: &Understood) -> serde_json::Value {
    serde_json::json!({
        "kernel_info": u.stage1.info,
        "sidecar_disagreements": u.disagreements,
    })
}

/// What Stage 1 understood, one line each. The description and the names come from the LLM's answer: printed
/// with control characters escaped.
pub(crate) fn print_info(info: &KernelInfo) {
    let safe = |text: &str| kt_record::terminal_safe(text).into_owned();
    println!("kernel       {}", safe(&info.name));
    println!("computes     {}", safe(&info.description));
    println!("parameters   {}", safe(&info.parameters.join(", ")));
    let axes = ["x", "y", "z"];
    let size: Vec<String> = info
        .problem_size
        .iter()
        .zip(axes)
        .map(|(d, a)| format!("{a} = {}", d.expression))
        .collect();
    println!(
        "problem size {} ({}-D)",
        safe(&size.join(", ")),
        info.dimensions()
    );
    println!("outputs      {}", safe(&info.outputs.join(", ")));
    if !info.inputs_and_outputs.is_empty() {
        println!("read+written {}", safe(&info.inputs_and_outputs.join(", ")));
    }
    println!(
        "block        {}x{}x{}",
        info.default_block[0], info.default_block[1], info.default_block[2]
    );
}

pub(crate) fn print_disagreements(u: &Understood, compared: bool) {
    if !compared {
        return;
    }
    if u.disagreements.is_empty() {
        println!("sidecar      agrees");
    } else {
        println!("sidecar disagreements ({}):", u.disagreements.len());
        for d in &u.disagreements {
            println!("  - {}", kt_record::terminal_safe(&d.to_string()));
        }
    }
}
