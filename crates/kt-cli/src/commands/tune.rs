//! `kt tune FILE`: tune a kernel's parameters on this machine's GPU (kt-tuner does the work). This file
//! holds the flags and what is read and checked before a GPU is asked for; `tune/` the rest: `describe`
//! (`--dry-run`), `compile_only` (`--compile-only`), `gpu_run` (the tuning, `--sanitize`, Kernel Tuner's
//! results reused and exported) and `report` (what is printed).

mod compile_only;
mod describe;
mod gpu_run;
mod report;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use kt_tuner::TimingPolicy;
use kt_tuner::input::{LoadedKernel, SpaceRequest, TestSource, TuneSpace, load_kernel, load_tests};
use kt_tuner::model::args::{SizeChoice, TestSet};
use kt_tuner::search::{Limits, Strategy};
use kt_tuner::session::{TuneOptions, TunerConfig};

use super::kernel_input::{LaunchFlags, default_cache_dir, parse_pairs, parse_params, parse_sizes};
use super::tune_checks;
use compile_only::compile_only;
use describe::{describe, describe_json};
use gpu_run::{export_kernel_tuner, read_prior, report_reuse, sanitize_best, tune_on_gpu};
use report::{default_only_line, print_result};

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The CUDA file. Its sidecar (same name, .toml) supplies problem size, inputs and the default launch.
    pub file: PathBuf,
    /// The kernel to tune (default: the sidecar's, or the only one in the file).
    #[arg(long)]
    pub kernel: Option<String>,
    /// A tunable parameter and its values, e.g. `--param block_size_x=16,32,64`. Repeatable. Without any,
    /// block sizes are tuned.
    #[arg(long = "param", value_name = "NAME=V1,V2,..")]
    pub params: Vec<String>,
    /// The value of a template parameter that is not tuned (a type, or a fixed number), e.g.
    /// `--template T=float`. Repeatable; a template parameter named in `--param` is tuned instead.
    #[arg(long = "template", value_name = "NAME=VALUE")]
    pub templates: Vec<String>,
    /// A restriction over parameter names, e.g. `--restrict "block_size_x*block_size_y <= 512"`. Repeatable.
    #[arg(long = "restrict", value_name = "EXPR")]
    pub restrictions: Vec<String>,
    /// Search algorithm: brute_force, random, greedy, annealing or genetic (`--strategy` is still taken).
    #[arg(long = "search", alias = "strategy", default_value = "brute_force")]
    pub strategy: String,
    /// Stop after this many configurations.
    #[arg(long)]
    pub max_evals: Option<usize>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub time_limit: Option<f64>,
    /// Seed of the strategy's random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Override a scalar argument's value, e.g. `--size n=1000000`. Repeatable.
    #[arg(long = "size", value_name = "NAME=V")]
    pub sizes: Vec<String>,
    /// Read inputs from a tests directory (TESTS_FORMAT) instead of generating them from the sidecar.
    #[arg(long = "tests-dir", value_name = "DIR")]
    pub tests: Option<PathBuf>,
    /// Generate inputs at the sidecar's small `test` size instead of its `bench` size.
    #[arg(long, conflicts_with = "bench_size")]
    pub test_size: bool,
    /// Generate inputs at the sidecar's `bench` size (the default of `kt tune`).
    #[arg(long)]
    pub bench_size: bool,
    /// How many generated tests (different seeds) to tune on (`--tests N`, as on every command).
    #[arg(long, alias = "tests", value_name = "N", default_value_t = 1,
          value_parser = super::tests_flag::count::<usize>)]
    pub tests_count: usize,
    #[command(flatten)]
    pub launch: LaunchFlags,
    /// Extra NVRTC option (repeatable), e.g. `--nvrtc-option=-use_fast_math`.
    #[arg(long = "nvrtc-option")]
    pub nvrtc_options: Vec<String>,
    /// A directory NVRTC searches for the kernel's own headers (`#include "common.h"`), besides the
    /// kernel file's directory. Repeatable.
    #[arg(long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Directory for compiled modules and device facts (default ~/.cache/kt/tuner).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Results file (JSON lines): finished configurations are skipped when the run is repeated.
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Leave out the restrictions kt reads from the code (a template parameter the kernel ties to the
    /// block size: `block_size_x == blockSize`, with block_size_x then following it).
    #[arg(long)]
    pub no_derived_restrictions: bool,
    /// Skip verification (timing studies only).
    #[arg(long)]
    pub no_verify: bool,
    /// Flush the L2 cache before every timed run.
    #[arg(long)]
    pub flush_l2: bool,
    /// Minimum timed runs per configuration.
    #[arg(long, default_value_t = 3)]
    pub min_reps: u32,
    /// Write Kernel Tuner's cache-file JSON here.
    #[arg(long)]
    pub export_kt_cache: Option<PathBuf>,
    /// Write a Kernel Tuner Python script here that tunes the same space (`--simulate`: replays kt's results),
    /// with the cache, the kernel source and the test's arrays it reads beside it.
    #[arg(long)]
    pub export_kt_script: Option<PathBuf>,
    /// Start from a Kernel Tuner cache file: the configurations it holds for this GPU (same device name),
    /// kernel, parameters and problem size are reused, not run again.
    #[arg(long, value_name = "FILE")]
    pub kt_cache: Option<PathBuf>,
    /// Skip measuring the device's copy bandwidth (% of peak is then not reported).
    #[arg(long)]
    pub no_peak: bool,
    /// Run compute-sanitizer (racecheck, memcheck, initcheck, synccheck) on the best configuration at the
    /// sidecar's small test size; its findings are reported and fail the run.
    #[arg(long)]
    pub sanitize: bool,
    /// Print the whole result (every configuration, phases) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only compile the default configuration, as tuning would (NVRTC, then nvcc where NVRTC fails), for
    /// `--arch`: no GPU needed. Says which compiler compiled it.
    #[arg(long)]
    pub compile_only: bool,
    /// The architecture `--compile-only` compiles for.
    #[arg(long, default_value = "sm_90", requires = "compile_only")]
    pub arch: String,
    /// Check the kernel, sidecar, parameters and restrictions, count the space after restrictions and say what
    /// would be tuned, without a GPU: exit 0, or 2 on bad input.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
    if args.dry_run {
        return Ok(super::dry_run::report(prepare(&args).and_then(|p| {
            if args.json {
                Ok(serde_json::to_string_pretty(&describe_json(&args, &p)?)?)
            } else {
                describe(&args, &p).map(|lines| lines.join("\n"))
            }
        })));
    }
    let prepared = prepare(&args)?;
    if args.compile_only {
        return compile_only(
            &prepared.loaded.kernel,
            &prepared.tests,
            &prepared.space.configs,
            &args.arch,
        );
    }
    let prior = args
        .kt_cache
        .as_deref()
        .map(|p| read_prior(p, &prepared.loaded.kernel, &prepared.tests))
        .transpose()?;
    let options = tune_options(&args)?;
    if !prepared.loaded.parsed.mutable_globals.is_empty() {
        // the tuner applies the policy itself (for kt transform's candidates too); this says so
        let stateful = options.timing.for_stateful_kernel();
        eprintln!(
            "note: `{}` writes device variables that outlive a launch ({}): each configuration is sampled at \
             least {} times, the last sample checked, and checked once more after up to {} further launches, \
             so a kernel that changes behaviour after some launches is caught",
            prepared.loaded.parsed.name,
            prepared
                .loaded
                .parsed
                .mutable_globals
                .iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            stateful.min_reps,
            stateful.late_check_launches
        );
    }
    let config = TunerConfig {
        cache_dir: args.cache_dir.clone().or_else(default_cache_dir),
        ..TunerConfig::default()
    };
    let result = tune_on_gpu(&config, &prepared, &options, args.json)?;
    let sanitizer = sanitize_best(&args, &config, &prepared, &result)?;
    if let Some(prior) = &prior {
        report_reuse(prior, &prepared.loaded.kernel, &result);
    }
    export_kernel_tuner(&args, &prepared, &result)?;
    print_result(&args, &prepared, &result, sanitizer.as_ref())?;
    if let Some(line) = default_only_line(&result, &args.file) {
        eprintln!("{line}");
    }
    let sanitizer_ok = sanitizer.as_ref().is_none_or(|s| {
        s.clean() || matches!(s, kt_tuner::host::sanitize::SanitizerReport::Skipped { .. })
    });
    Ok(if result.best.is_some() && sanitizer_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What `kt tune` has read and checked before a GPU is asked for: the kernel with its space, the tests.
struct Prepared {
    loaded: LoadedKernel,
    space: TuneSpace,
    sizes: BTreeMap<String, f64>,
    tests: TestSet,
    /// Where the launch came from (the file's own launch) and a fallback to it, a line each.
    launch_lines: Vec<String>,
}

/// Reads the kernel, sets its space and makes its tests; a bad parameter, restriction or sidecar is an
/// error here, before the GPU is touched.
fn prepare(args: &TuneArgs) -> anyhow::Result<Prepared> {
    let mut loaded = load_kernel(&args.file, args.kernel.as_deref(), &args.include)?;
    if let Some(note) = &loaded.host_code_note {
        eprintln!("note: {note}");
    }
    args.launch.apply(&mut loaded.kernel.geometry);
    if args.launch.problem_size.is_some() {
        loaded.dims = loaded.kernel.geometry.problem_size.len();
    }
    let params = parse_params(&args.params)?;
    tune_checks::no_duplicate_params(&params)?;
    let templates: Vec<String> = loaded
        .template_params()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    tune_checks::params_are_used(
        &params,
        &loaded.kernel.source,
        &templates,
        &loaded.kernel.kernel_name,
    )?;
    tune_checks::restrictions_compare(&args.restrictions)?;
    let request = SpaceRequest {
        params,
        templates: parse_pairs(&args.templates)?,
        restrictions: args.restrictions.clone(),
        derive: !args.no_derived_restrictions,
    };
    let space = TuneSpace::set(&mut loaded, request)?;
    for line in &loaded.host_launch_lines {
        eprintln!("{line}");
    }
    for line in &space.instance_lines {
        eprintln!("{line}");
    }
    for line in space.derived.lines() {
        eprintln!("{line} (--no-derived-restrictions: leave them out)");
    }
    loaded.kernel.compiler_options = args.nvrtc_options.clone();
    let sizes = parse_sizes(&args.sizes)?;
    let tests = load_tests(&loaded, test_source(args), &sizes, &space.configs)?;
    let mut left = TuneSpace::after_restrictions(&loaded, &tests)?.len();
    let combinations: usize = loaded
        .kernel
        .params
        .iter()
        .map(|t| t.values.len())
        .product();
    let mut launch_lines = loaded.host_launch_lines.clone();
    // the user's own --restrict is kept as given; what kt chose or derived gives way to the default launch
    if left == 0
        && args.restrictions.is_empty()
        && let Some(line) = TuneSpace::only_the_default_launch(&mut loaded, combinations)
    {
        eprintln!("note: {line}");
        launch_lines.push(line);
        left = TuneSpace::after_restrictions(&loaded, &tests)?.len();
    }
    tune_checks::space_not_empty(left, combinations)?;
    Strategy::parse(&args.strategy).with_context(|| unknown_strategy(&args.strategy))?;
    Ok(Prepared {
        loaded,
        space,
        sizes,
        tests,
        launch_lines,
    })
}

fn unknown_strategy(name: &str) -> String {
    format!("unknown strategy `{name}` (brute_force, random, greedy, annealing, genetic)")
}

/// `--tests-dir DIR`, else tests generated at the sidecar's `test` size (`--test-size`) or `bench` size.
fn test_source(args: &TuneArgs) -> TestSource<'_> {
    match &args.tests {
        Some(dir) => TestSource::Dir(dir),
        None => TestSource::Generate {
            size: if args.test_size {
                SizeChoice::Test
            } else {
                SizeChoice::Bench
            },
            count: args.tests_count,
        },
    }
}

fn tune_options(args: &TuneArgs) -> anyhow::Result<TuneOptions> {
    let strategy =
        Strategy::parse(&args.strategy).with_context(|| unknown_strategy(&args.strategy))?;
    Ok(TuneOptions {
        strategy,
        limits: Limits {
            max_evals: args.max_evals,
            time_limit: args.time_limit.map(Duration::from_secs_f64),
        },
        seed: args.seed,
        timing: TimingPolicy {
            flush_l2: args.flush_l2,
            min_reps: args.min_reps.max(1),
            ..TimingPolicy::default()
        },
        verify: !args.no_verify,
        results_cache: args.results.clone(),
        measure_peak: !args.no_peak,
        kernel_tuner_cache: args.kt_cache.clone(),
        seeds: Vec::new(),
    })
}
