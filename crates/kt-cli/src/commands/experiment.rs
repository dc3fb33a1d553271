//! `kt experiment`: run a matrix of transformations (kernels × strategies × settings × models × repeats) as
//! ordinary kt runs, resume it, report on it, or export it to SLURM. Logic lives in kt-experiments.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use kt_experiments::{
    CellRunner, CellStatus, Design, KtBinary, Report, ReportFormat, RunOptions, SlurmOptions,
    StopSignal, expand, prepare_out_dir, run_experiment, run_one_cell, write_plots, write_slurm,
};

#[derive(Debug, Args)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    pub command: ExperimentCommand,
}

#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// Run every cell of a design (finished cells are skipped, half-finished ones resumed).
    Run(RunArgs),
    /// Run one cell by id (what each SLURM array task does).
    #[command(name = "run-cell")]
    RunCell(RunCellArgs),
    /// List the cells a design expands to, with their ids.
    Cells(CellsArgs),
    /// Write a SLURM job-array script (one task per cell) plus the collection job.
    Slurm(SlurmArgs),
    /// Aggregate finished cells: per kernel × strategy × model tables and plots.
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The experiment design (TOML), e.g. experiments/smoke.toml.
    pub file: PathBuf,
    /// GPUs to use, one cell at a time on each (sets CUDA_VISIBLE_DEVICES per cell), e.g. 0,1,2,3.
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<String>,
    /// Most cells at once (default: one per GPU, or 1 without --gpus).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Experiment directory (default: $KT_EXPERIMENTS_DIR/<name> or ./kt-experiments/<name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seconds a stopped cell gets to checkpoint after SIGINT before it is killed.
    #[arg(long, default_value_t = 60)]
    pub grace: u64,
    /// The kt binary that runs cells (default: this one).
    #[arg(long, env = "KT_EXPERIMENT_KT")]
    pub kt_bin: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the run summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Check the design, each cell's kernel, strategy and LLM spec, and say what would run, without a GPU
    /// and without contacting an LLM: exit 0, or 2 on bad input.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct RunCellArgs {
    /// The experiment design (TOML).
    pub file: PathBuf,
    /// The cell id (see `kt experiment cells FILE`).
    #[arg(long)]
    pub cell: String,
    /// Experiment directory (default as for `run`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// GPU for the cell (default: the GPUs the environment gives, e.g. SLURM's CUDA_VISIBLE_DEVICES).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Seconds a stopped cell gets to checkpoint after SIGINT/SIGTERM before it is killed.
    #[arg(long, default_value_t = 60)]
    pub grace: u64,
    /// The kt binary that runs the cell (default: this one).
    #[arg(long, env = "KT_EXPERIMENT_KT")]
    pub kt_bin: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CellsArgs {
    /// The experiment design (TOML).
    pub file: PathBuf,
    /// Print the cells as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// The experiment design (TOML).
    pub file: PathBuf,
    /// SLURM partition for the array tasks.
    #[arg(long)]
    pub partition: String,
    /// Time limit of each array task (HH:MM:SS; default: the design's largest time budget + 10 % + 10 min,
    /// or 4 h without one).
    #[arg(long)]
    pub time: Option<String>,
    /// GPUs per array task (0: none, for CPU-only partitions).
    #[arg(long, alias = "gpus-per-job", default_value_t = 1)]
    pub gpus_per_task: u32,
    /// How tasks ask for GPUs: gres (--gres=gpu:N) or gpus-per-task (--gpus-per-task=N).
    #[arg(long, default_value = "gres")]
    pub gpu_request: String,
    /// Let SLURM requeue preempted tasks (#SBATCH --requeue); a requeued cell resumes from its checkpoint.
    #[arg(long)]
    pub requeue: bool,
    /// At most this many array tasks at once (--array=0-N%M).
    #[arg(long)]
    pub max_running: Option<u32>,
    /// SLURM account to charge.
    #[arg(long)]
    pub account: Option<String>,
    /// SLURM quality of service.
    #[arg(long)]
    pub qos: Option<String>,
    /// A further #SBATCH option for both jobs, e.g. --sbatch=--mem=64G (repeatable).
    #[arg(long = "sbatch", value_name = "OPTION", allow_hyphen_values = true)]
    pub extra: Vec<String>,
    /// CPUs per array task.
    #[arg(long, default_value_t = 8)]
    pub cpus_per_task: u32,
    /// Experiment directory (default as for `run`); the scripts go to <out>/slurm/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The kt binary the tasks run (default: this one).
    #[arg(long, env = "KT_EXPERIMENT_KT")]
    pub kt_bin: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A design file (its results are in --out or the default directory) or an experiment directory.
    pub path: PathBuf,
    /// md, csv or json.
    #[arg(long, default_value = "md")]
    pub format: String,
    /// Experiment directory, when PATH is a design file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Skip the plots (PNG and SVG in <dir>/report/).
    #[arg(long)]
    pub no_plots: bool,
}

pub fn run(args: ExperimentArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ExperimentCommand::Run(a) => run_all(a),
        ExperimentCommand::RunCell(a) => run_cell(a),
        ExperimentCommand::Cells(a) => cells(a),
        ExperimentCommand::Slurm(a) => slurm(a),
        ExperimentCommand::Report(a) => report(a),
    }
}

fn kt_binary(path: Option<PathBuf>) -> anyhow::Result<KtBinary> {
    Ok(match path {
        Some(p) => KtBinary::new(p),
        None => KtBinary::current()?,
    })
}

fn load(file: &Path) -> anyhow::Result<(Design, Vec<kt_experiments::Cell>)> {
    let design = Design::load(file)?;
    let cells = expand(&design)?;
    Ok((design, cells))
}

/// `--dry-run`: the design expanded, and what each distinct kernel, strategy and LLM spec of its cells is.
fn dry_run(a: &RunArgs) -> anyhow::Result<String> {
    let (design, cells) = load(&a.file)?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let mut kernels = std::collections::BTreeSet::new();
    let mut strategies = std::collections::BTreeSet::new();
    let mut models = std::collections::BTreeSet::new();
    for c in &cells {
        if kernels.insert((c.kernel_file.clone(), c.kernel_choice.clone())) {
            let file = design.root.join(&c.kernel_file);
            kt_pipeline::prepare::KernelInput::read_with_includes(
                &file,
                c.kernel_choice.as_deref(),
                &[],
            )
            .and_then(|k| k.kernel_name())
            .with_context(|| format!("cell {}", c.id))?;
        }
        if strategies.insert(c.strategy.clone()) {
            let name = if c.strategy.ends_with(".toml") {
                design.root.join(&c.strategy).to_string_lossy().into_owned()
            } else {
                c.strategy.clone()
            };
            kt_pipeline::strategy::load_strategy(&name, None)
                .with_context(|| format!("cell {}", c.id))?;
        }
        if models.insert(c.model.clone()) {
            let file = design.llm_configs.get(&c.model).map(PathBuf::as_path);
            super::experiment_keys::cell_config(&c.model, file, &cwd)
                .and_then(|config| super::experiment_keys::check_key(&c.model, &config))
                .with_context(|| format!("cell {}", c.id))?;
        }
    }
    let out = a.out.clone().unwrap_or_else(|| design.default_out_dir());
    let join = |set: &std::collections::BTreeSet<String>| {
        set.iter().cloned().collect::<Vec<_>>().join(", ")
    };
    Ok([
        format!("{}: {} cells", design.name, cells.len()),
        format!("kernels: {} (each read and parsed)", kernels.len()),
        format!("strategies: {}", join(&strategies)),
        format!(
            "LLMs: {} (specs and API key variables checked, not contacted)",
            join(&models)
        ),
        format!("results would go to {}", out.display()),
        "dry run: nothing written, no cell run, no GPU used".to_string(),
    ]
    .join("\n"))
}

fn run_all(a: RunArgs) -> anyhow::Result<ExitCode> {
    if a.dry_run {
        return Ok(super::dry_run::report(dry_run(&a)));
    }
    let (design, cells) = load(&a.file)?;
    let out = a.out.unwrap_or_else(|| design.default_out_dir());
    let mut opts = RunOptions::new(&out, kt_binary(a.kt_bin)?);
    opts.gpus = a
        .gpus
        .into_iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    opts.jobs = a.jobs;
    opts.grace = Duration::from_secs(a.grace);
    opts.progress = !a.quiet && !a.json;
    // Checked before any cell makes data: each cell's `kt transform` then stops after Stage 1, keeping no
    // test data, and the next `kt experiment run` on a GPU machine continues it.
    if let Some(reason) = kt_tuner::host::cuda_probe::gpu_missing() {
        eprintln!(
            "no GPU here ({reason}): each cell stops after Stage 1, before making its tests; run this command \
             again on a machine with a GPU to continue them"
        );
    }
    let stop = StopSignal::on_interrupt()?;
    let summary = run_experiment(&design, &cells, &opts, &stop)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!(
            "{}: {} cells — {} already done, {} finished, {} failed, {} over budget, {} crashed, {} need a GPU, \
             {} hit an LLM outage, {} not done; results in {}",
            design.name,
            summary.total,
            summary.skipped,
            summary.finished,
            summary.failed,
            summary.over_budget,
            summary.crashed,
            summary.needs_gpu,
            summary.llm_unavailable,
            summary.not_done,
            out.join("cells.jsonl").display()
        );
        if !summary.complete() {
            println!(
                "run the same command again to continue (finished cells are skipped, stopped ones resume)"
            );
        }
    }
    Ok(if summary.not_done > 0 {
        ExitCode::from(130)
    } else if summary.llm_unavailable > 0 && summary.crashed + summary.needs_gpu == 0 {
        // Only outages left: try again later (EX_TEMPFAIL, as `kt transform` exits for one run).
        ExitCode::from(75)
    } else if summary.crashed + summary.needs_gpu + summary.llm_unavailable > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn run_cell(a: RunCellArgs) -> anyhow::Result<ExitCode> {
    let (design, cells) = load(&a.file)?;
    let out = a.out.unwrap_or_else(|| design.default_out_dir());
    prepare_out_dir(&design, &cells, &out)?;
    let mut runner = CellRunner::new(kt_binary(a.kt_bin)?, design.root.clone(), &out);
    runner.grace = Duration::from_secs(a.grace);
    let stop = StopSignal::on_interrupt()?;
    let status = run_one_cell(&design, &cells, &a.cell, &runner, a.gpu.as_deref(), &stop)?;
    match status {
        Some(s) => {
            println!("{} {}", s.as_str(), a.cell);
            Ok(match s {
                _ if s.is_final() => ExitCode::SUCCESS,
                CellStatus::NeedsGpu => ExitCode::from(2),
                CellStatus::LlmUnavailable => ExitCode::from(75),
                _ => ExitCode::FAILURE,
            })
        }
        None => {
            println!(
                "{} not run to its end: stopped, or another kt process holds it; run it again later",
                a.cell
            );
            Ok(ExitCode::from(130))
        }
    }
}

fn cells(a: CellsArgs) -> anyhow::Result<ExitCode> {
    let (design, cells) = load(&a.file)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cells)?);
    } else {
        for c in &cells {
            println!(
                "{}\t{}\t{}\t{}\tr{}\tseed {}",
                c.id,
                c.kernel,
                c.variant(),
                c.model,
                c.repeat,
                c.seed
            );
        }
        eprintln!("{}: {} cells", design.name, cells.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn slurm(a: SlurmArgs) -> anyhow::Result<ExitCode> {
    let (design, cells) = load(&a.file)?;
    let out = a.out.unwrap_or_else(|| design.default_out_dir());
    prepare_out_dir(&design, &cells, &out)?;
    // Tasks run on other nodes, in other directories: give them absolute paths.
    let out =
        std::fs::canonicalize(&out).with_context(|| format!("resolving {}", out.display()))?;
    let file = std::fs::canonicalize(&a.file)
        .with_context(|| format!("resolving {}", a.file.display()))?;
    let kt = kt_binary(a.kt_bin)?.program;
    // The KT_* settings of this shell go into the scripts, so tasks run as this shell would (not as
    // whatever the compute node's login environment says); KT_EXPERIMENT_KT is the binary, written as KT.
    let env = std::env::vars()
        .filter(|(k, _)| k.starts_with("KT_") && k != "KT_EXPERIMENT_KT")
        .collect();
    let opts = SlurmOptions {
        partition: a.partition,
        time: a.time,
        gpus: a.gpus_per_task,
        gpu_request: a.gpu_request.parse()?,
        cpus_per_task: a.cpus_per_task,
        out,
        kt,
        requeue: a.requeue,
        max_running: a.max_running,
        account: a.account,
        qos: a.qos,
        extra: a.extra,
        env,
    };
    let scripts = write_slurm(&design.name, &file, &cells, &opts)?;
    println!(
        "{} array tasks, one per cell, in {}",
        scripts.tasks,
        scripts.dir.display()
    );
    println!("  cell list:  {}", scripts.cell_list.display());
    println!("  array job:  {}", scripts.array.display());
    println!("  collection: {}", scripts.collect.display());
    println!("submit both with: {}", scripts.submit.display());
    Ok(ExitCode::SUCCESS)
}

fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let format: ReportFormat = a.format.parse()?;
    let (report, dir) = Report::load(&a.path, a.out.as_deref())?;
    let text = report.render(format);
    let report_dir = dir.join("report");
    std::fs::create_dir_all(&report_dir)
        .with_context(|| format!("creating {}", report_dir.display()))?;
    let ext = match format {
        ReportFormat::Markdown => "md",
        ReportFormat::Csv => "csv",
        ReportFormat::Json => "json",
    };
    let file = report_dir.join(format!("report.{ext}"));
    std::fs::write(&file, &text).with_context(|| format!("writing {}", file.display()))?;
    print!("{text}");
    if !a.no_plots {
        let plots = write_plots(&report, &report_dir)?;
        eprintln!(
            "{} plots and {} written to {}",
            plots.len(),
            file.display(),
            report_dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
