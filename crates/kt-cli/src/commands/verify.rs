//! `kt verify REFERENCE.cu CANDIDATE.cu`: run both kernels on the same inputs and compare every output.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use kt_tuner::session::{Tuner, TunerConfig, Verdict, config_from_block};
use kt_tuner::space::Config;

use super::tune::{default_cache_dir, load_kernel, load_tests, parse_kv, parse_sizes};

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The reference kernel (its sidecar gives inputs, outputs, problem size and default launch).
    pub reference: PathBuf,
    /// The candidate kernel; same parameters as the reference.
    pub candidate: PathBuf,
    /// A parameter value of the candidate, e.g. `--param block_size_x=128`. Repeatable.
    #[arg(long = "param", value_name = "NAME=V")]
    pub params: Vec<String>,
    /// Kernel name in the reference file.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Kernel name in the candidate file (default: the reference's name).
    #[arg(long)]
    pub candidate_kernel: Option<String>,
    /// Read inputs from a tests directory instead of generating them.
    #[arg(long)]
    pub tests: Option<PathBuf>,
    /// Generate inputs at the sidecar's `bench` size (default: its small `test` size).
    #[arg(long)]
    pub bench_size: bool,
    /// How many generated tests (seeds).
    #[arg(long, default_value_t = 3)]
    pub tests_count: usize,
    /// Override a scalar argument's value. Repeatable.
    #[arg(long = "size", value_name = "NAME=V")]
    pub sizes: Vec<String>,
    /// Grid divisors of the candidate for x, comma-separated.
    #[arg(long)]
    pub grid_div_x: Option<String>,
    #[arg(long)]
    pub grid_div_y: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let reference = load_kernel(&args.reference, args.kernel.as_deref())?;
    let name = args
        .candidate_kernel
        .clone()
        .or_else(|| Some(reference.kernel.kernel_name.clone()));
    let cand_source = std::fs::read_to_string(&args.candidate)
        .with_context(|| format!("reading {}", args.candidate.display()))?;
    let parsed = kt_cuda::parse(&cand_source)?;
    let ck = parsed.select_kernel(name.as_deref())?;
    let ref_names: Vec<&str> = reference.params.iter().map(|p| p.name.as_str()).collect();
    let cand_names: Vec<&str> = ck.params.iter().map(|p| p.name.as_str()).collect();
    anyhow::ensure!(
        ref_names == cand_names,
        "the candidate's parameters {cand_names:?} differ from the reference's {ref_names:?}: both kernels must take the same arguments"
    );
    let mut candidate = reference.kernel.clone();
    candidate.source = cand_source;
    candidate.kernel_name = ck.name.clone();
    if let Some(g) = &args.grid_div_x {
        candidate.geometry.grid_div[0] = g.split(',').map(|s| s.trim().to_string()).collect();
    }
    if let Some(g) = &args.grid_div_y {
        candidate.geometry.grid_div[1] = g.split(',').map(|s| s.trim().to_string()).collect();
    }
    let values: Result<Vec<(String, i64)>, anyhow::Error> = args
        .params
        .iter()
        .map(|p| {
            let (k, v) = parse_kv(p)?;
            Ok((
                k,
                v.parse::<i64>()
                    .with_context(|| format!("`{p}`: value must be an integer"))?,
            ))
        })
        .collect();
    let cand_config = Config(values?);
    let ref_config = reference
        .default_block
        .map(|b| config_from_block(&[], b))
        .unwrap_or(Config(vec![]));
    let sizes = parse_sizes(&args.sizes)?;
    let tests = load_tests(
        &reference,
        args.tests.as_deref(),
        !args.bench_size,
        args.tests_count,
        &sizes,
    )?;
    let config = TunerConfig {
        cache_dir: default_cache_dir(),
        ..TunerConfig::default()
    };
    let mut tuner = Tuner::new(config).context("starting the tuner (this needs an NVIDIA GPU, its driver and NVRTC; `kt doctor` checks them)")?;
    let report = tuner.verify(
        &reference.kernel,
        &ref_config,
        &candidate,
        &cand_config,
        &tests,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for t in &report.tests {
            println!(
                "test {}: {}",
                t.test,
                if t.verdict.is_ok() { "PASS" } else { "FAIL" }
            );
            for o in &t.outputs {
                println!(
                    "  {} {}",
                    if o.passed() { "pass" } else { "FAIL" },
                    o.describe()
                );
            }
            for i in &t.inputs_modified {
                println!("  FAIL input {i} was modified by the candidate");
            }
            match &t.verdict {
                Verdict::CompileError { log } => println!("  compile error:\n{log}"),
                Verdict::Invalid { reason } | Verdict::Crashed { reason } => {
                    println!("  {}: {reason}", t.verdict.short())
                }
                Verdict::Timeout { after_s } => println!("  timeout after {after_s:.1} s"),
                _ => {}
            }
        }
        println!(
            "{}",
            if report.passed() {
                "all tests passed"
            } else {
                "verification FAILED"
            }
        );
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
