//! `kt llm ask`: one question to the configured LLM, printing the answer and a usage line. The provider comes
//! from kt.toml / `$KT_CONFIG` / `~/.config/kt/config.toml` (`[llm]`), then `KT_LLM`, then `--llm`, then the
//! individual flags.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use kt_llm::{LlmConfig, LlmRequest, LlmResponse, OutputSchema, Recorder, StructuredMode};

#[derive(Debug, Args)]
pub struct LlmArgs {
    #[command(subcommand)]
    pub command: LlmCommand,
}

#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Ask the configured LLM one question; print the answer (or JSON) and a usage line (tokens, time, cost).
    Ask(AskArgs),
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question.
    pub prompt: String,
    /// Provider and model in one: openai:gpt-4.1, anthropic:claude-sonnet-4-0, llama-server:local,
    /// replay:kt-runs/ID/llm.jsonl, scripted:answers.toml, manual:prompts/, exec:COMMAND (prompt on stdin,
    /// answer on stdout).
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub llm: Option<String>,
    /// openai, anthropic, together, deepseek, vllm, llama-server, ollama, scripted, replay, manual or exec.
    #[arg(long)]
    pub provider: Option<String>,
    /// API base URL including the version, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Environment variable that holds the API key (default per provider, e.g. OPENAI_API_KEY).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Limit for one attempt, in seconds (`total_timeout_s` in kt.toml).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Longest silence of a streamed answer, in seconds (`idle_timeout_s` in kt.toml).
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<f64>,
    /// Most tokens to generate.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    #[arg(long, value_name = "T")]
    pub temperature: Option<f64>,
    /// Stream the answer (server-sent events), guarded by the idle timeout: the default.
    #[arg(long, conflicts_with = "no_stream")]
    pub stream: bool,
    /// Wait for the whole answer in one response instead of streaming it.
    #[arg(long)]
    pub no_stream: bool,
    /// Ask for JSON following this JSON schema file; prints the parsed JSON.
    #[arg(long, value_name = "FILE")]
    pub json_schema: Option<PathBuf>,
    /// How to get JSON: native, instruction, separate or hybrid.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<StructuredMode>,
    /// A system message to send first.
    #[arg(long)]
    pub system: Option<String>,
    /// Append the call to this llm.jsonl record.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Node label of the call (scripted answers and records key on it).
    #[arg(long, default_value = "ask")]
    pub node: String,
    /// Print the answer, thought and usage as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: LlmArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        LlmCommand::Ask(a) => ask(a),
    }
}

fn ask(a: AskArgs) -> anyhow::Result<ExitCode> {
    let config = ask_config(&a)?;
    let mut client = config.build_client()?;
    if let Some(path) = &a.record {
        client = client.with_recorder(Recorder::open(path)?);
    }
    let mut request = LlmRequest::new(&a.node);
    if let Some(system) = &a.system {
        request = request.system(system);
    }
    request = request.user(&a.prompt);
    let schema = match &a.json_schema {
        Some(path) => Some(output_schema(path)?),
        None => None,
    };
    let mode = a.mode.or(config.structured_mode).unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (parsed, response) = runtime.block_on(async {
        match schema {
            Some(s) => client
                .structured_value(request, s, mode)
                .await
                .map(|(v, r)| (Some(v), r)),
            None => client.complete(request).await.map(|r| (None, r)),
        }
    })?;
    let usage = client.totals().run.summary();
    if a.json {
        print_json(parsed, &response)?;
    } else {
        match parsed {
            Some(v) => println!("{}", serde_json::to_string_pretty(&v)?),
            // escaped on a terminal (an answer must not set the clipboard or retitle the window); piped as is
            None if std::io::IsTerminal::is_terminal(&std::io::stdout()) => {
                println!("{}", kt_record::terminal_safe(&response.text))
            }
            None => println!("{}", response.text),
        }
        for repair in &response.repairs {
            eprintln!("read leniently: {repair}");
        }
        // On stderr, so that the answer can be piped on its own.
        eprintln!("{} {}: {usage}", response.provider, response.model);
    }
    Ok(ExitCode::SUCCESS)
}

/// The configuration of `kt llm ask`: the file, the environment and `--llm`, then its own flags.
fn ask_config(a: &AskArgs) -> anyhow::Result<LlmConfig> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    // KT_LLM_BASE_URL stays in force with --llm; --base-url below still wins over it.
    let mut config = LlmConfig::load_with(&cwd, a.llm.as_deref(), None)?;
    config.overlay(LlmConfig {
        provider: a.provider.clone(),
        base_url: a.base_url.clone(),
        model: a.model.clone(),
        api_key_env: a.api_key_env.clone(),
        timeout_secs: a.timeout,
        idle_timeout_secs: a.idle_timeout,
        max_tokens: a.max_tokens,
        temperature: a.temperature,
        stream: if a.no_stream {
            Some(false)
        } else {
            a.stream.then_some(true)
        },
        ..LlmConfig::default()
    });
    Ok(config)
}

/// The JSON schema in `path`, named after the file.
fn output_schema(path: &std::path::Path) -> anyhow::Result<OutputSchema> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let schema: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("answer");
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    Ok(OutputSchema { name, schema })
}

/// `--json`: the answer with everything the call reported.
fn print_json(parsed: Option<serde_json::Value>, response: &LlmResponse) -> anyhow::Result<()> {
    let out = serde_json::json!({
        "answer": response.text,
        "json": parsed,
        "thought": response.thought,
        "provider": response.provider,
        "model": response.model,
        "usage": response.usage,
        "cost_usd": response.cost_usd,
        "elapsed_ms": response.elapsed.as_millis() as u64,
        "attempts": response.attempts,
        "repairs": response.repairs,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
