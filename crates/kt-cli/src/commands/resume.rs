//! `kt resume RUN`: continues a stopped `kt transform` run (Ctrl-C, no GPU, a crash) from its last
//! checkpoint. Recorded LLM answers and tuning results are reused; only what was not done yet runs.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use kt_llm::Recorder;
use kt_pipeline::strategy::StrategyOverrides;
use kt_pipeline::{PromptLibrary, RunDir};

use super::analyze::{llm_client, runtime};
use super::transform::{
    LiveView, NO_LLM, cancel_on_ctrl_c, report, stage3_settings, strategy_with,
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
    let meta = dir.read_meta()?;
    let overrides = StrategyOverrides {
        replan: meta.settings.replan,
        breakdown: meta.settings.breakdown,
        candidates: meta.settings.candidates,
    };
    let strategy = strategy_with(&meta.strategy, overrides)?;
    let Some((client, config)) = llm_client(args.llm.as_deref())? else {
        anyhow::bail!("{NO_LLM}");
    };
    eprintln!(
        "resuming {} ({} strategy)",
        dir.root().display(),
        strategy.name
    );
    let client = client.with_recorder(Recorder::open(dir.llm_jsonl())?);
    let prompts = std::sync::Arc::new(PromptLibrary::locate(args.prompts.as_deref())?);
    let rt = runtime()?;
    let cancel = cancel_on_ctrl_c(&rt);
    let view = LiveView::new(args.json);
    let settings = stage3_settings(strategy, client, &config, prompts, &view, cancel);
    let outcome = rt.block_on(kt_pipeline::stage3::resume(&dir, settings));
    view.finish();
    report(&dir, outcome, args.json)
}
