//! `kt tune FILE`: tune a kernel's parameters on this machine's GPU (kt-tuner does the work).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use kt_tuner::args::{ParamSpec, SizeChoice, SuiteInputs, TestSet};
use kt_tuner::search::{Limits, Strategy};
use kt_tuner::session::{
    TunableKernel, TuneOptions, TuneResult, Tuner, TunerConfig, config_from_block,
};
use kt_tuner::space::{Restriction, TunableParam};
use kt_tuner::suite::{SuiteKernel, default_block_space};
use kt_tuner::{TimingPolicy, export};

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
    /// A restriction over parameter names, e.g. `--restrict "block_size_x*block_size_y <= 512"`. Repeatable.
    #[arg(long = "restrict", value_name = "EXPR")]
    pub restrictions: Vec<String>,
    /// Search strategy: brute_force, random, greedy, annealing or genetic.
    #[arg(long, default_value = "brute_force")]
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
    #[arg(long)]
    pub tests: Option<PathBuf>,
    /// Generate inputs at the sidecar's small `test` size instead of its `bench` size.
    #[arg(long)]
    pub test_size: bool,
    /// How many generated tests (different seeds) to tune on.
    #[arg(long, default_value_t = 1)]
    pub tests_count: usize,
    /// Problem size expressions, comma-separated, x first (default: the sidecar's).
    #[arg(long)]
    pub problem_size: Option<String>,
    /// Grid divisors for x, comma-separated names or expressions (default: block_size_x).
    #[arg(long)]
    pub grid_div_x: Option<String>,
    #[arg(long)]
    pub grid_div_y: Option<String>,
    #[arg(long)]
    pub grid_div_z: Option<String>,
    /// Dynamic shared memory in bytes, as an expression over parameters.
    #[arg(long)]
    pub shared_mem: Option<String>,
    /// Extra NVRTC option (repeatable), e.g. `--nvrtc-option=-use_fast_math`.
    #[arg(long = "nvrtc-option")]
    pub nvrtc_options: Vec<String>,
    /// Directory for compiled modules and device facts (default ~/.cache/kt/tuner).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Results file (JSON lines): finished configurations are skipped when the run is repeated.
    #[arg(long)]
    pub results: Option<PathBuf>,
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
    /// Write a Kernel Tuner Python script for the best configuration here.
    #[arg(long)]
    pub export_kt_script: Option<PathBuf>,
    /// Skip measuring the device's copy bandwidth (% of peak is then not reported).
    #[arg(long)]
    pub no_peak: bool,
    /// Print the whole result (every configuration, phases) as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn parse_kv(text: &str) -> anyhow::Result<(String, String)> {
    let (k, v) = text
        .split_once('=')
        .with_context(|| format!("`{text}`: expected NAME=VALUE"))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

pub(crate) fn parse_params(list: &[String]) -> anyhow::Result<Vec<TunableParam>> {
    list.iter()
        .map(|p| {
            let (name, values) = parse_kv(p)?;
            let values: Result<Vec<i64>, _> =
                values.split(',').map(|v| v.trim().parse::<i64>()).collect();
            Ok(TunableParam::new(
                name,
                values.with_context(|| format!("`{p}`: values must be integers"))?,
            ))
        })
        .collect()
}

pub(crate) fn parse_sizes(list: &[String]) -> anyhow::Result<BTreeMap<String, f64>> {
    list.iter()
        .map(|s| {
            let (k, v) = parse_kv(s)?;
            Ok((
                k,
                v.parse::<f64>()
                    .with_context(|| format!("`{s}`: value must be a number"))?,
            ))
        })
        .collect()
}

pub(crate) fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("kt").join("tuner"))
}

/// The kernel, its parameter specs and how to make inputs: from the sidecar when there is one.
pub(crate) struct Loaded {
    pub kernel: TunableKernel,
    pub params: Vec<ParamSpec>,
    pub inputs: Option<SuiteInputs>,
    pub default_block: Option<[i64; 3]>,
    pub dims: usize,
}

pub(crate) fn load_kernel(file: &Path, kernel: Option<&str>) -> anyhow::Result<Loaded> {
    let source =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let sidecar_path = kt_cuda::Sidecar::path_for(file);
    if sidecar_path.is_file() {
        let sc = kt_cuda::Sidecar::load(&sidecar_path)?;
        let dims = sc.problem_size.len();
        let sk = SuiteKernel::new(&source, &sc, kernel)?;
        return Ok(Loaded {
            kernel: sk.kernel,
            params: sk.params,
            inputs: Some(sk.inputs),
            default_block: Some(sk.default_block),
            dims,
        });
    }
    let parsed = kt_cuda::parse(&source)?;
    let k = parsed.select_kernel(kernel)?;
    Ok(Loaded {
        kernel: TunableKernel::new(source.clone(), k.name.clone(), Vec::new()),
        params: ParamSpec::from_kernel(k),
        inputs: None,
        default_block: None,
        dims: 0,
    })
}

pub(crate) fn load_tests(
    loaded: &Loaded,
    tests: Option<&Path>,
    test_size: bool,
    count: usize,
    sizes: &BTreeMap<String, f64>,
) -> anyhow::Result<TestSet> {
    let tolerances = loaded
        .inputs
        .as_ref()
        .map(|i| i.tolerances())
        .unwrap_or_default();
    if let Some(dir) = tests {
        return Ok(TestSet::load_dir(dir, &loaded.params, &tolerances)?);
    }
    let Some(inputs) = &loaded.inputs else {
        bail!("no sidecar next to the kernel, so inputs cannot be generated: give --tests DIR");
    };
    let size = if test_size {
        SizeChoice::Test
    } else {
        SizeChoice::Bench
    };
    Ok(inputs.make_tests(&loaded.params, size, sizes, count)?)
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

pub fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
    let mut loaded = load_kernel(&args.file, args.kernel.as_deref())?;
    if let Some(p) = &args.problem_size {
        loaded.kernel.geometry.problem_size = split_list(p);
        loaded.dims = loaded.kernel.geometry.problem_size.len();
    }
    if loaded.kernel.geometry.problem_size.is_empty() {
        bail!(
            "no problem size: give --problem-size (names or expressions over scalar arguments, x first)"
        );
    }
    for (d, g) in [&args.grid_div_x, &args.grid_div_y, &args.grid_div_z]
        .into_iter()
        .enumerate()
    {
        if let Some(g) = g {
            loaded.kernel.geometry.grid_div[d] = split_list(g);
        }
    }
    if let Some(s) = &args.shared_mem {
        loaded.kernel.geometry.shared_mem = Some(s.clone());
    }
    let mut params = parse_params(&args.params)?;
    let mut restrictions = args.restrictions.clone();
    if params.is_empty() {
        let (p, r) = default_block_space(loaded.dims);
        params = p;
        restrictions.extend(r);
    }
    loaded.kernel.reference = loaded.default_block.map(|b| config_from_block(&params, b));
    loaded.kernel.params = params;
    loaded.kernel.restrictions = restrictions.into_iter().map(Restriction::Expr).collect();
    loaded.kernel.compiler_options = args.nvrtc_options.clone();
    let sizes = parse_sizes(&args.sizes)?;
    let tests = load_tests(
        &loaded,
        args.tests.as_deref(),
        args.test_size,
        args.tests_count,
        &sizes,
    )?;

    let strategy = Strategy::parse(&args.strategy).with_context(|| {
        format!(
            "unknown strategy `{}` (brute_force, random, greedy, annealing, genetic)",
            args.strategy
        )
    })?;
    let options = TuneOptions {
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
    };
    let config = TunerConfig {
        cache_dir: args.cache_dir.clone().or_else(default_cache_dir),
        ..TunerConfig::default()
    };
    let mut tuner = Tuner::new(config).context("starting the tuner (this needs an NVIDIA GPU, its driver and NVRTC; `kt doctor` checks them)")?;
    let bar = indicatif::ProgressBar::new(0);
    if !args.json {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let result = tuner.tune(&loaded.kernel, &tests, &options, &mut |p| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        bar.set_message(format!(
            "{} {} best {}",
            p.config,
            p.verdict,
            p.best_ms
                .map(|b| format!("{b:.4} ms"))
                .unwrap_or("-".into())
        ));
    })?;
    bar.finish_and_clear();

    if let Some(path) = &args.export_kt_cache {
        let problem = tests
            .tests
            .first()
            .and_then(|t| {
                loaded
                    .kernel
                    .geometry
                    .problem(
                        result
                            .best
                            .as_ref()
                            .map(|b| &b.config)
                            .unwrap_or(&kt_tuner::Config(vec![])),
                        &t.scalars(),
                    )
                    .ok()
            })
            .unwrap_or([1, 1, 1]);
        std::fs::write(
            path,
            serde_json::to_string_pretty(&export::kernel_tuner_cache(
                &loaded.kernel,
                &result,
                problem,
            ))?,
        )?;
    }
    if let Some(path) = &args.export_kt_script
        && let Some(t) = tests.tests.first()
    {
        std::fs::write(
            path,
            export::kernel_tuner_script(
                &loaded.kernel,
                t,
                &result,
                &args.file.display().to_string(),
            ),
        )?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print_summary(&result);
    }
    Ok(if result.best.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_summary(r: &TuneResult) {
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
        "", "config", "median ms", "GB/s", "GFLOP/s", "of peak", "regs"
    );
    if let Some(d) = &r.reference {
        row("default", d);
    }
    if let Some(b) = &r.best {
        row("best", b);
    }
    if let Some(s) = r.speedup() {
        println!("speedup over the default launch: {s:.3}x");
    }
    if let Some(p) = r.peak_gbps {
        println!("measured copy bandwidth: {p:.0} GB/s");
    }
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
