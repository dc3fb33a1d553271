//! `kt tune FILE`: tune a kernel's parameters on this machine's GPU (kt-tuner does the work).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use kt_tuner::args::{SizeChoice, TestSet};
use kt_tuner::export::import::KernelTunerCache;
use kt_tuner::input::{LoadedKernel, SpaceRequest, TestSource, TuneSpace, load_kernel, load_tests};
use kt_tuner::search::{Limits, Strategy};
use kt_tuner::session::{TunableKernel, TuneOptions, TuneResult, Tuner, TunerConfig};
use kt_tuner::space::Restriction;
use kt_tuner::{TimingPolicy, export};

use super::kernel_input::{LaunchFlags, default_cache_dir, parse_pairs, parse_params, parse_sizes};
use super::tune_checks;

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
        s.clean() || matches!(s, kt_tuner::sanitize::SanitizerReport::Skipped { .. })
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
    for line in &space.instance_lines {
        eprintln!("{line}");
    }
    for line in space.derived.lines() {
        eprintln!("{line} (--no-derived-restrictions: leave them out)");
    }
    loaded.kernel.compiler_options = args.nvrtc_options.clone();
    let sizes = parse_sizes(&args.sizes)?;
    let tests = load_tests(&loaded, test_source(args), &sizes, &space.configs)?;
    let left = TuneSpace::after_restrictions(&loaded, &tests)?.len();
    let combinations: usize = loaded
        .kernel
        .params
        .iter()
        .map(|t| t.values.len())
        .product();
    tune_checks::space_not_empty(left, combinations)?;
    Strategy::parse(&args.strategy).with_context(|| unknown_strategy(&args.strategy))?;
    Ok(Prepared {
        loaded,
        space,
        sizes,
        tests,
    })
}

/// `--dry-run`: what would be tuned, on what, and how large the space is after its restrictions.
fn describe(args: &TuneArgs, p: &Prepared) -> anyhow::Result<Vec<String>> {
    let kernel = &p.loaded.kernel;
    let counted = TuneSpace::after_restrictions(&p.loaded, &p.tests)?;
    let params: Vec<String> = kernel
        .params
        .iter()
        .map(|t| {
            let values: Vec<String> = t.values.iter().map(|v| v.to_string()).collect();
            format!("{}={}", t.name, values.join(","))
        })
        .collect();
    let combinations: usize = kernel.params.iter().map(|t| t.values.len()).product();
    let mut lines = vec![
        format!(
            "kernel `{}` of {}{}",
            kernel.kernel_name,
            args.file.display(),
            p.loaded
                .sidecar
                .as_ref()
                .map(|s| format!(", described by {}", s.display()))
                .unwrap_or_default()
        ),
        format!("parameters: {}", params.join(" ")),
    ];
    for r in &kernel.restrictions {
        if let Restriction::Expr(e) = r {
            lines.push(format!("restriction: {e}"));
        }
    }
    lines.push(format!(
        "space: {combinations} configurations, {} after restrictions (at most 1024 threads per block)",
        counted.len()
    ));
    lines.push(format!(
        "tests: {} ({})",
        p.tests.tests.len(),
        time_label(&p.tests)
    ));
    lines.push(format!(
        "strategy: {}{}",
        args.strategy,
        args.max_evals
            .map(|n| format!(", at most {n} configurations"))
            .unwrap_or_default()
    ));
    lines.push("dry run: nothing compiled or run; without --dry-run this tunes on the GPU".into());
    Ok(lines)
}

/// `--dry-run --json`: what [`describe`] says, as one JSON object.
fn describe_json(args: &TuneArgs, p: &Prepared) -> anyhow::Result<serde_json::Value> {
    let kernel = &p.loaded.kernel;
    let counted = TuneSpace::after_restrictions(&p.loaded, &p.tests)?;
    let params: serde_json::Map<String, serde_json::Value> = kernel
        .params
        .iter()
        .map(|t| {
            let values: Vec<serde_json::Value> = t
                .values
                .iter()
                .map(|v| {
                    serde_json::from_str(&v.to_string()).unwrap_or_else(|_| v.to_string().into())
                })
                .collect();
            (t.name.clone(), values.into())
        })
        .collect();
    let restrictions: Vec<String> = kernel
        .restrictions
        .iter()
        .filter_map(|r| match r {
            Restriction::Expr(e) => Some(e.to_string()),
            _ => None,
        })
        .collect();
    Ok(serde_json::json!({
        "dry_run": true,
        "file": args.file,
        "kernel": kernel.kernel_name,
        "sidecar": p.loaded.sidecar,
        "parameters": params,
        "restrictions": restrictions,
        "configurations": kernel.params.iter().map(|t| t.values.len()).product::<usize>(),
        "after_restrictions": counted.len(),
        "tests": p.tests.tests.len(),
        "time_basis": time_label(&p.tests),
        "strategy": args.strategy,
        "max_evals": args.max_evals,
    }))
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
    })
}

/// Starts the tuner and tunes, with a progress bar unless the result is printed as JSON.
fn tune_on_gpu(
    config: &TunerConfig,
    prepared: &Prepared,
    options: &TuneOptions,
    json: bool,
) -> anyhow::Result<TuneResult> {
    let mut tuner = Tuner::new(config.clone()).context("starting the tuner (this needs an NVIDIA GPU, its driver and NVRTC; `kt doctor` checks them)")?;
    let bar = indicatif::ProgressBar::new(0);
    if !json {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let basis = time_label(&prepared.tests);
    let result = tuner.tune(
        &prepared.loaded.kernel,
        &prepared.tests,
        options,
        &mut |p| {
            bar.set_length(p.total as u64);
            bar.set_position(p.done as u64);
            bar.set_message(format!(
                "{} {} best {}",
                p.config,
                p.verdict,
                p.best_ms
                    .map(|b| format!("{b:.4} ms ({basis})"))
                    .unwrap_or("-".into())
            ));
        },
    )?;
    bar.finish_and_clear();
    Ok(result)
}

/// `--sanitize`: compute-sanitizer on the best configuration at the sidecar's small test size.
fn sanitize_best(
    args: &TuneArgs,
    config: &TunerConfig,
    prepared: &Prepared,
    result: &TuneResult,
) -> anyhow::Result<Option<kt_tuner::sanitize::SanitizerReport>> {
    let (Some(best), true) = (&result.best, args.sanitize) else {
        return Ok(None);
    };
    let source = match args.tests.as_deref() {
        Some(dir) => TestSource::Dir(dir),
        None => TestSource::Generate {
            size: SizeChoice::Test,
            count: 1,
        },
    };
    let small = load_tests(
        &prepared.loaded,
        source,
        &prepared.sizes,
        &prepared.space.configs,
    )?;
    Ok(Some(kt_tuner::sanitize::run_tools(
        config,
        &prepared.loaded.kernel,
        &best.config,
        &small,
    )?))
}

/// `--export-kt-cache` and `--export-kt-script`.
fn export_kernel_tuner(
    args: &TuneArgs,
    prepared: &Prepared,
    result: &TuneResult,
) -> anyhow::Result<()> {
    if args.export_kt_cache.is_none() && args.export_kt_script.is_none() {
        return Ok(());
    }
    let export = export::KernelTunerExport::new(&prepared.loaded.kernel, &prepared.tests, result)?;
    if let Some(path) = &args.export_kt_cache {
        std::fs::write(path, export.cache_json()?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.export_kt_script {
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .with_context(|| format!("{}: give a file name for the script", path.display()))?;
        export.write(dir, Some(&name))?;
    }
    Ok(())
}

fn print_result(
    args: &TuneArgs,
    prepared: &Prepared,
    result: &TuneResult,
    sanitizer: Option<&kt_tuner::sanitize::SanitizerReport>,
) -> anyhow::Result<()> {
    if !args.json {
        print_summary(result, &prepared.tests);
        for line in sanitizer.iter().flat_map(|s| s.lines()) {
            println!("{line}");
        }
        return Ok(());
    }
    let mut json = serde_json::to_value(result)?;
    if let Some(o) = json.as_object_mut() {
        o.insert("time_basis".into(), time_basis(&prepared.tests));
        o.insert("sanitizer".into(), serde_json::to_value(sanitizer)?);
        o.insert(
            "host_code_left_out".into(),
            serde_json::to_value(&prepared.loaded.host_code_left_out)?,
        );
        o.insert(
            "derived_restrictions".into(),
            serde_json::to_value(prepared.space.derived.lines())?,
        );
    }
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}

/// `--compile-only`: the default configuration compiled for `arch` as the tuner would compile it.
fn compile_only(
    kernel: &TunableKernel,
    tests: &TestSet,
    configs: &[kt_tuner::space::Config],
    arch: &str,
) -> anyhow::Result<ExitCode> {
    let cc = kt_tuner::compile_check::parse_arch(arch)
        .with_context(|| format!("--arch {arch}: expected sm_XY, e.g. sm_90"))?;
    let config = kernel
        .reference
        .clone()
        .or_else(|| configs.first().cloned())
        .context("no configuration to compile: give --param or a sidecar with default_block")?;
    let scalars = tests.tests.first().map(|t| t.scalars()).unwrap_or_default();
    let nvcc = kt_tuner::nvcc::find();
    match kt_tuner::compile_check::compile_configuration(
        kernel,
        &config,
        &scalars,
        cc,
        nvcc.as_deref(),
    )? {
        Ok(c) => {
            let compiler = if c.log.starts_with(kt_tuner::nvcc::NVCC_LOG_PREFIX) {
                "nvcc"
            } else {
                "NVRTC"
            };
            println!(
                "compiled `{}` at {config} for sm_{}{} with {compiler}: {} bytes of CUBIN in {:.0} ms{}",
                kernel.kernel_name,
                cc.0,
                cc.1,
                c.cubin.len(),
                c.ms,
                c.lowered_name
                    .map(|s| format!(", symbol {s}"))
                    .unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(f) => {
            eprintln!("{}", f.log);
            eprintln!(
                "error: `{}` did not compile at {config} for sm_{}{}",
                kernel.kernel_name, cc.0, cc.1
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

/// One line when the default launch is the only configuration that verified (a kernel that works at one
/// launch only): the result is that launch, and `kt transform` is what makes the kernel tunable.
fn default_only_line(r: &TuneResult, file: &Path) -> Option<String> {
    let best = r.best.as_ref()?;
    let reference = r.reference.as_ref()?;
    let others_ok = r
        .measurements
        .iter()
        .any(|m| m.verdict.is_ok() && m.config != reference.config);
    (best.config == reference.config && !others_ok).then(|| {
        format!(
            "note: `{}` is not tunable as written: only its default launch {} runs correctly ({} other configuration(s) tried), so that launch is the verified result; `kt transform {}` makes it tunable",
            r.kernel_name,
            reference.config,
            r.measurements.iter().filter(|m| m.config != reference.config).count(),
            file.display()
        )
    })
}

/// What each time in kt's result is, for `--json` readers.
fn time_basis(tests: &TestSet) -> serde_json::Value {
    let first = tests.tests.first().map(|t| t.id.as_str()).unwrap_or("-");
    serde_json::json!({
        "objective": export::objective_basis(tests),
        "timing": format!("the launches of test `{first}`, one launch each (ms)"),
        "per_test_ms": "each test's median launch (ms), in test order",
        "tests": tests.tests.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
    })
}

/// A time's unit in a few words: one launch, or a sum over the tests.
fn time_label(tests: &TestSet) -> String {
    match tests.tests.len() {
        1 => "one launch".into(),
        n => format!("sum of {n} tests"),
    }
}

/// Reads and checks `--kt-cache` before any GPU time is spent.
fn read_prior(
    path: &Path,
    kernel: &TunableKernel,
    tests: &TestSet,
) -> anyhow::Result<KernelTunerCache> {
    let prior = KernelTunerCache::read(path)?;
    prior.check(kernel, &tests.tests)?;
    Ok(prior)
}

fn report_reuse(prior: &KernelTunerCache, kernel: &TunableKernel, r: &TuneResult) {
    match prior.measurements_for(kernel, &r.device.name) {
        Some(m) => {
            let reused = r
                .measurements
                .iter()
                .filter(|x| x.from_cache && m.contains_key(&x.config))
                .count();
            println!(
                "{}: {reused} configuration(s) reused from Kernel Tuner's results on {}",
                prior.path.display(),
                prior.device_name
            );
            if r.best
                .as_ref()
                .is_some_and(|b| b.from_cache && m.contains_key(&b.config))
            {
                println!(
                    "the best configuration is one of Kernel Tuner's results: kt did not run or verify it here (`kt verify` does)"
                );
            }
        }
        None => println!(
            "{}: measured on {}, this GPU is {}: nothing reused, every configuration was run",
            prior.path.display(),
            prior.device_name,
            r.device.name
        ),
    }
}

fn print_summary(r: &TuneResult, tests: &TestSet) {
    println!(
        "device: {} ({} SMs, sm_{}{}), strategy {:?}, {} configs in the space, {} measured",
        r.device.name,
        r.device.sm_count,
        r.device.compute_capability.0,
        r.device.compute_capability.1,
        r.strategy,
        r.space_size,
        r.measurements.len()
    );
    let mut failed: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &r.measurements {
        if !m.verdict.is_ok() {
            *failed.entry(m.verdict.short()).or_default() += 1;
        }
    }
    if !failed.is_empty() {
        println!("failed configurations: {failed:?}");
    }
    let row = |label: &str, m: &kt_tuner::Measurement| {
        println!(
            "{:<10} {:<40} {:>10} {:>10} {:>10} {:>8} {:>5}",
            label,
            m.config.to_string(),
            m.objective_ms()
                .map(|t| format!("{t:.4}"))
                .unwrap_or("-".into()),
            m.gbps.map(|g| format!("{g:.1}")).unwrap_or("-".into()),
            m.gflops.map(|g| format!("{g:.1}")).unwrap_or("-".into()),
            m.percent_of_peak
                .map(|p| format!("{p:.1}%"))
                .unwrap_or("-".into()),
            m.registers.map(|r| r.to_string()).unwrap_or("-".into()),
        );
    };
    println!(
        "{:<10} {:<40} {:>10} {:>10} {:>10} {:>8} {:>5}",
        "", "config", "ms", "GB/s", "GFLOP/s", "of peak", "regs"
    );
    if let Some(d) = &r.reference {
        row("default", d);
    }
    if let Some(b) = &r.best {
        row("best", b);
    }
    println!(
        "ms: {}; GB/s and GFLOP/s: one launch of test `{}`",
        export::objective_basis(tests),
        tests.tests.first().map(|t| t.id.as_str()).unwrap_or("-")
    );
    if let Some(s) = r.speedup() {
        println!(
            "speedup over the default launch: {s:.3}x ({})",
            time_label(tests)
        );
    }
    if let Some(note) = r.slower_best_note() {
        println!("{note}");
    }
    print_peak_basis(r);
    // a share of peak above 100 % is printed as measured; what it means, from the tuner
    for (label, m) in [("default", &r.reference), ("best", &r.best)] {
        if let Some(note) = m.as_ref().and_then(|m| m.peak_note.as_deref()) {
            println!("{label}: {note}");
        }
    }
    print_gaming_verdicts(r);
    let p = &r.phases;
    println!(
        "phases (ms): context {:.0}, upload {:.0}, reference {:.0}, benchmark {:.0}, compile wait {:.0}, compile cpu {:.0}, total {:.0}",
        p.context_ms,
        p.upload_ms,
        p.reference_ms,
        p.benchmark_ms,
        p.compile_wait_ms,
        p.compile_cpu_ms,
        p.total_ms
    );
}

/// What `% of peak` is measured against.
fn print_peak_basis(r: &TuneResult) {
    let memory = kt_tuner::floor::Ceilings::from_figures(
        r.theoretical_peaks.map(|t| t.bandwidth_gb_s),
        r.peak_gbps,
        0,
    );
    let fp32 = kt_tuner::floor::Ceiling::confirm(
        r.theoretical_peaks.map(|t| t.fp32_gflop_s),
        r.peak_fp32_gflops,
        "GFLOP/s",
        "kt's FMA kernel",
    );
    if memory.bandwidth_gbps.is_some() || fp32.value.is_some() {
        println!("% of peak against {}; {}", memory.basis, fp32.basis);
    }
}

/// A line each for the configurations that gamed their measurement.
fn print_gaming_verdicts(r: &TuneResult) {
    for m in r.measurements.iter().filter(|m| {
        use kt_tuner::Verdict as V;
        // the verdicts that name a kernel gaming its measurement, each worth a line of its own
        matches!(
            m.verdict,
            V::Nondeterministic { .. }
                | V::OutOfBounds { .. }
                | V::TimedRunDiffers { .. }
                | V::ImpossibleTime { .. }
                | V::CarriesState { .. }
        )
    }) {
        println!("{}: {}", m.config, m.verdict.reason());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kt_tuner::args::KernelTest;

    fn tests(n: usize) -> TestSet {
        TestSet {
            tests: (0..n)
                .map(|i| KernelTest {
                    id: format!("t{i}"),
                    args: vec![],
                    tolerances: Default::default(),
                })
                .collect(),
        }
    }

    #[test]
    fn every_time_says_whether_it_is_one_launch_or_a_sum_over_tests() {
        assert_eq!(time_label(&tests(1)), "one launch");
        assert_eq!(time_label(&tests(3)), "sum of 3 tests");
        let basis = time_basis(&tests(3));
        assert!(
            basis["objective"]
                .as_str()
                .unwrap()
                .starts_with("the sum over 3 tests (t0, t1, t2)"),
            "{basis}"
        );
        assert_eq!(
            basis["timing"],
            "the launches of test `t0`, one launch each (ms)"
        );
    }
}
