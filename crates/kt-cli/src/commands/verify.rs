//! `kt verify REFERENCE.cu CANDIDATE.cu`: run both kernels on the same inputs and compare every output; a
//! candidate that verifies is rerun twice to catch races, and `--sanitize` runs compute-sanitizer on it.
//! The candidate may launch its own way (its own sidecar, or `--block` / `--problem-size` / `--grid-div-*` /
//! `--shared-mem`), take its parameters in another order, or need a scalar the reference lacks (`--arg`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use kt_tuner::arg_map::match_arguments;
use kt_tuner::args::{SizeChoice, SuiteInputs, TestSet};
use kt_tuner::default_tests::{self, ExtraTest};
use kt_tuner::expr::Bindings;
use kt_tuner::input::{
    CandidateSpec, LoadedKernel, TestSource, load_candidate, load_kernel, load_tests,
    reference_kernel_name,
};
use kt_tuner::sanitize::{SanitizerReport, run_tools};
use kt_tuner::session::{Tuner, TunerConfig, Verdict, VerifyReport, config_from_block};
use kt_tuner::space::{Config, TunableParam};

use super::kernel_input::{
    LaunchFlags, default_cache_dir, parse_kv, parse_pairs, parse_sizes, split_list,
};

#[derive(Debug, Args)]
#[command(after_long_help = DEFAULT_TESTS_HELP)]
pub struct VerifyArgs {
    /// The reference kernel (its sidecar gives inputs, outputs, problem size and default launch).
    pub reference: PathBuf,
    /// The candidate kernel (may be the reference's file, with another `--kernel`).
    pub candidate: PathBuf,
    /// A parameter value of the candidate, e.g. `--param block_size_x=128`. Repeatable.
    #[arg(long = "param", value_name = "NAME=V")]
    pub params: Vec<String>,
    /// The candidate's kernel (default: the reference's name, or the only kernel of the file).
    #[arg(long)]
    pub kernel: Option<String>,
    /// The reference's kernel when its file holds several (default: `--kernel` if the reference has it,
    /// else its sidecar's).
    #[arg(long)]
    pub reference_kernel: Option<String>,
    /// The candidate's own sidecar (its launch: problem size, default block, shared memory). Default: the
    /// sidecar beside the candidate (`NAME.KERNEL.toml`, then `NAME.toml`) when it is not the reference's.
    #[arg(long, value_name = "FILE")]
    pub candidate_sidecar: Option<PathBuf>,
    /// The candidate's block, x,y,z (e.g. `--block 16,16`).
    #[arg(long, value_name = "X,Y,Z")]
    pub block: Option<String>,
    /// The candidate's launch.
    #[command(flatten)]
    pub launch: LaunchFlags,
    /// The value of a candidate scalar the reference does not take, as an expression over the reference's
    /// scalars and the parameters, e.g. `--arg tiles=ceil_div(n,256)`. Repeatable.
    #[arg(long = "arg", value_name = "NAME=EXPR")]
    pub args: Vec<String>,
    /// A template parameter's value, e.g. `--template T=float`; the reference takes those that name its own
    /// template parameters too. Repeatable.
    #[arg(long = "template", value_name = "NAME=VALUE")]
    pub templates: Vec<String>,
    /// Read inputs from a tests directory instead of generating them (`--tests DIR` is still taken).
    #[arg(long = "tests-dir", alias = "tests", value_name = "DIR")]
    pub tests: Option<PathBuf>,
    /// Generate inputs at the sidecar's `bench` size (default: its small `test` size).
    #[arg(long, conflicts_with = "test_size")]
    pub bench_size: bool,
    /// Generate inputs at the sidecar's small `test` size (the default of `kt verify`).
    #[arg(long)]
    pub test_size: bool,
    /// How many seeded tests at the chosen size.
    #[arg(long, default_value_t = 3)]
    pub tests_count: usize,
    /// Only the seeded tests: no `odd` and `large` tests.
    #[arg(long)]
    pub seeds_only: bool,
    /// The quick set for fast iteration: no `bench` and `past-2^24` tests (the seeded ones, `odd` and
    /// `large` still run).
    #[arg(long)]
    pub quick: bool,
    /// Override a scalar argument's value. Repeatable.
    #[arg(long = "size", value_name = "NAME=V")]
    pub sizes: Vec<String>,
    /// A directory NVRTC searches for the kernels' own headers, besides each file's directory. Repeatable.
    #[arg(long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Run compute-sanitizer (racecheck, memcheck, initcheck, synccheck) on the candidate at the first
    /// test; its findings fail the verification.
    #[arg(long)]
    pub sanitize: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Check both kernels, their launches and the tests that need no GPU, and say what would be verified,
    /// without a GPU: exit 0, or 2 on bad input.
    #[arg(long)]
    pub dry_run: bool,
}

const DEFAULT_TESTS_HELP: &str = "\
Default tests, when inputs are generated from the reference's sidecar (no --tests):
  gen1..genN  --tests-count seeds at the sidecar's `test` size (--bench-size: its `bench` size);
  odd         every size (an integer scalar named in the problem size or an array's size) moved to the
              next prime above it: catches kernels that assume whole tiles or an even dimension;
  large       the problem's dimensions (the sizes its problem size names) doubled until it covers the
              GPU several times over (8 x SMs x threads per SM), each at most its `bench` value, the test
              within an eighth of the GPU's memory: catches races that a few blocks do not show;
  bench       every size at its `bench` value, the size the kernel is timed at (halved until it fits an
              eighth of the GPU's memory): catches kernels right only at small sizes;
  past-2^24   an output whose length follows one size grown past 2^24 elements (odd): catches an index
              computed through `float`, exact only up to 2^24 (left out when another test is that large).
  The reference is timed once at the largest of the other tests; bench is halved, and past-2^24 left out,
  where its launch would take over a second (estimated as growing with the square of the data), and the
  output says so.
--quick leaves out bench and past-2^24; --seeds-only runs only the seeded tests. A size that is a multiple
of 64 in every test is a warning. Every array sits between guard bytes: a write past either end fails.";

/// The reference's kernel name: `--reference-kernel`, else `--kernel` when the reference file has it.
fn reference_name(args: &VerifyArgs) -> Option<String> {
    reference_kernel_name(
        &args.reference,
        args.reference_kernel.as_deref(),
        args.kernel.as_deref(),
        &args.include,
    )
}

fn parse_block(text: &str) -> anyhow::Result<[i64; 3]> {
    let mut block = [1i64; 3];
    let parts = split_list(text);
    anyhow::ensure!(
        (1..=3).contains(&parts.len()),
        "--block {text}: give 1 to 3 sizes, x first (e.g. 16,16)"
    );
    for (i, p) in parts.iter().enumerate() {
        block[i] = p
            .parse()
            .with_context(|| format!("--block {text}: `{p}` is not an integer"))?;
    }
    Ok(block)
}

/// The candidate with its own launch (kt-tuner's `load_candidate`), then the command line's overrides:
/// launch flags, block, parameter values, template arguments, arguments the reference lacks.
fn candidate_with_overrides(
    args: &VerifyArgs,
    reference: &LoadedKernel,
) -> anyhow::Result<(LoadedKernel, Config)> {
    let spec = CandidateSpec {
        file: &args.candidate,
        kernel: args.kernel.as_deref(),
        sidecar: args.candidate_sidecar.as_deref(),
        include_dirs: &args.include,
    };
    let mut cand = load_candidate(spec, reference)?;
    args.launch.apply(&mut cand.kernel.geometry);
    let block = match &args.block {
        Some(b) => Some(parse_block(b)?),
        None => cand.default_block,
    };
    let mut config = block
        .map(|b| config_from_block(&[], b))
        .unwrap_or(Config(vec![]));
    for p in &args.params {
        let (k, v) = parse_kv(p)?;
        let v: i64 = v
            .parse()
            .with_context(|| format!("`{p}`: value must be an integer"))?;
        match config.0.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v.into(),
            None => config.0.push((k, v.into())),
        }
    }
    // a template parameter given as a --param is instantiated at that value
    let tuned: Vec<TunableParam> = config
        .0
        .iter()
        .map(|(n, v)| TunableParam::new(n.clone(), [v.clone()]))
        .collect();
    cand.set_template_args(&tuned, &parse_pairs(&args.templates)?)?;
    cand.size_arrays_per_configuration();
    cand.kernel.arguments =
        match_arguments(&reference.parsed, &cand.parsed, &parse_pairs(&args.args)?)?;
    Ok((cand, config))
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    if args.dry_run {
        return Ok(super::dry_run::report(dry_run(&args)));
    }
    let pair = load_pair(&args)?;
    let sizes = parse_sizes(&args.sizes)?;
    let configs = [pair.ref_config.clone(), pair.cand_config.clone()];
    let (mut tests, extras, mut described) = tests_before_gpu(&args, &pair, &sizes, &configs)?;
    let config = TunerConfig {
        cache_dir: default_cache_dir(),
        ..TunerConfig::default()
    };
    let mut tuner = Tuner::new(config.clone()).context("starting the tuner (this needs an NVIDIA GPU, its driver and NVRTC; `kt doctor` checks them)")?;
    add_device_sized_tests(
        &args,
        &extras,
        config.device,
        (&mut tuner, &pair.ref_config),
        &mut tests,
        &mut described,
    )?;
    let warnings = extras.warnings(&tests);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if !args.json {
        println!("tests: {}", describe_tests(&tests, &described));
    }
    let (report, rerun) = verify_and_rerun(&mut tuner, &pair, &tests)?;
    drop(tuner);
    let sanitizer = if args.sanitize && report.passed() && rerun.is_ok() {
        Some(run_tools(
            &config,
            &pair.candidate.kernel,
            &pair.cand_config,
            &tests,
        )?)
    } else {
        None
    };
    let passed = report.passed()
        && rerun.is_ok()
        && sanitizer
            .as_ref()
            .is_none_or(|s| s.clean() || matches!(s, SanitizerReport::Skipped { .. }));
    let mut report = report;
    if !rerun.is_ok()
        && let Some(t) = report.tests.first_mut()
    {
        t.verdict = rerun;
    }
    let outcome = Outcome {
        report: &report,
        passed,
        described: &described,
        warnings: &warnings,
        sanitizer: sanitizer.as_ref(),
    };
    if args.json {
        print_json(&pair, &outcome)?;
    } else {
        print_report(&report, sanitizer.as_ref(), passed);
    }
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The tests made before a GPU is asked for: the seeded ones and the odd one (the large, bench and
/// past-2^24 ones are sized for the device), with the plan of the extra tests and their descriptions.
fn tests_before_gpu<'a>(
    args: &VerifyArgs,
    pair: &'a Pair,
    sizes: &BTreeMap<String, f64>,
    configs: &'a [Config],
) -> anyhow::Result<(TestSet, DefaultTests<'a>, Vec<String>)> {
    let mut tests = load_tests(&pair.reference, test_source(args), sizes, configs)?;
    let extras = DefaultTests {
        inputs: pair
            .reference
            .inputs
            .as_ref()
            .filter(|_| args.tests.is_none() && !args.seeds_only),
        reference: &pair.reference,
        base: pair
            .reference
            .inputs
            .as_ref()
            .map(|i| i.values_at(size_choice(args), sizes)),
        configs,
        next_seed: args.tests_count.max(1) as u64 + 1,
    };
    let mut described = Vec::new();
    if let Some(odd) = extras.odd()? {
        described.push(odd.description);
        tests.tests.push(odd.test);
    }
    Ok((tests, extras, described))
}

/// `--dry-run`: both kernels at their configurations and the tests, checked without a GPU.
fn dry_run(args: &VerifyArgs) -> anyhow::Result<String> {
    let pair = load_pair(args)?;
    let sizes = parse_sizes(&args.sizes)?;
    let configs = [pair.ref_config.clone(), pair.cand_config.clone()];
    let (tests, extras, described) = tests_before_gpu(args, &pair, &sizes, &configs)?;
    let later = if extras.inputs.is_none() {
        ""
    } else if args.quick {
        "; large: sized once the GPU is known"
    } else {
        "; large, bench and past-2^24: sized once the GPU is known"
    };
    let at = |c: &Config| {
        if c.0.is_empty() {
            "at its sidecar's launch".to_string()
        } else {
            format!("at {c}")
        }
    };
    Ok([
        format!(
            "reference: `{}` of {} {}",
            pair.reference.kernel.kernel_name,
            args.reference.display(),
            at(&pair.ref_config)
        ),
        format!(
            "candidate: `{}` of {} {}",
            pair.candidate.kernel.kernel_name,
            args.candidate.display(),
            at(&pair.cand_config)
        ),
        format!("tests: {}{later}", describe_tests(&tests, &described)),
        "dry run: nothing compiled or run; without --dry-run this verifies on the GPU".to_string(),
    ]
    .join("\n"))
}

/// The reference and the candidate, each with the configuration it runs at.
struct Pair {
    reference: LoadedKernel,
    ref_config: Config,
    candidate: LoadedKernel,
    cand_config: Config,
}

/// Reads both kernels with their launches; notes on host code and globals go to stderr.
fn load_pair(args: &VerifyArgs) -> anyhow::Result<Pair> {
    let mut reference = load_kernel(
        &args.reference,
        reference_name(args).as_deref(),
        &args.include,
    )?;
    // A templated reference takes the `--template` values that name its own template parameters (verifying
    // a templated kernel against itself, or versions that share a template parameter).
    let given = parse_pairs(&args.templates)?;
    let reference_params = reference.template_params();
    let reference_given: BTreeMap<String, String> = given
        .into_iter()
        .filter(|(name, _)| reference_params.iter().any(|(p, _)| p == name))
        .collect();
    reference.set_template_args(&[], &reference_given)?;
    reference.size_arrays_per_configuration();
    let ref_config = reference
        .default_block
        .map(|b| config_from_block(&[], b))
        .unwrap_or(Config(vec![]));
    let (candidate, cand_config) = candidate_with_overrides(args, &reference)?;
    for note in [&reference.host_code_note, &candidate.host_code_note]
        .into_iter()
        .flatten()
    {
        eprintln!("note: {note}");
    }
    if let Some(note) = globals_note(&candidate.parsed) {
        eprintln!("note: {note}");
    }
    Ok(Pair {
        reference,
        ref_config,
        candidate,
        cand_config,
    })
}

fn size_choice(args: &VerifyArgs) -> SizeChoice {
    if args.bench_size {
        SizeChoice::Bench
    } else {
        SizeChoice::Test
    }
}

/// `--tests DIR`, else the seeded tests at the chosen size.
fn test_source(args: &VerifyArgs) -> TestSource<'_> {
    match &args.tests {
        Some(dir) => TestSource::Dir(dir),
        None => TestSource::Generate {
            size: size_choice(args),
            count: args.tests_count,
        },
    }
}

/// The `large` test, and unless `--quick` the `bench` and `past-2^24` ones: sized for the device, so once
/// the tuner has started.
/// The large test, and (unless `--quick`) the bench-size and past-2^24 ones, sized to what the reference's
/// run time allows (`reference`: the tuner and the reference's configuration, to time it).
fn add_device_sized_tests(
    args: &VerifyArgs,
    extras: &DefaultTests,
    device: usize,
    reference: (&mut Tuner, &Config),
    tests: &mut TestSet,
    described: &mut Vec<String>,
) -> anyhow::Result<()> {
    if let Some(large) = extras.large(device)? {
        described.push(large.description);
        tests.tests.push(large.test);
    }
    if !args.quick {
        let (tuner, ref_config) = reference;
        let (extra, notes) = extras.real_sizes(device, tests, tuner, ref_config)?;
        for note in notes {
            eprintln!("note: {note}");
        }
        for extra in extra {
            described.push(extra.description);
            tests.tests.push(extra.test);
        }
    }
    Ok(())
}

/// Verifies the candidate; one that verified is run twice more: differing reruns are a race.
fn verify_and_rerun(
    tuner: &mut Tuner,
    pair: &Pair,
    tests: &TestSet,
) -> anyhow::Result<(VerifyReport, Verdict)> {
    let report = tuner.verify(
        &pair.reference.kernel,
        &pair.ref_config,
        &pair.candidate.kernel,
        &pair.cand_config,
        tests,
    )?;
    let rerun = if report.passed() {
        tuner.check_determinism(&pair.candidate.kernel, &pair.cand_config, tests)?
    } else {
        Verdict::Ok
    };
    Ok((report, rerun))
}

/// What a verification found, for printing.
struct Outcome<'a> {
    report: &'a VerifyReport,
    passed: bool,
    described: &'a [String],
    warnings: &'a [String],
    sanitizer: Option<&'a SanitizerReport>,
}

fn print_json(pair: &Pair, o: &Outcome) -> anyhow::Result<()> {
    let mut json = serde_json::to_value(o.report)?;
    if let Some(map) = json.as_object_mut() {
        map.insert("passed".into(), o.passed.into());
        map.insert("extra_tests".into(), serde_json::to_value(o.described)?);
        map.insert("warnings".into(), serde_json::to_value(o.warnings)?);
        map.insert(
            "host_code_left_out".into(),
            serde_json::json!({
                "reference": pair.reference.host_code_left_out,
                "candidate": pair.candidate.host_code_left_out,
            }),
        );
        map.insert("sanitizer".into(), serde_json::to_value(o.sanitizer)?);
        map.insert(
            "mutable_globals".into(),
            serde_json::to_value(&pair.candidate.parsed.mutable_globals)?,
        );
    }
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}

/// The default test set's extra tests (see [`DEFAULT_TESTS_HELP`]), made from the reference's sidecar.
struct DefaultTests<'a> {
    /// None: no extra tests (inputs from --tests, --seeds-only, or no sidecar).
    inputs: Option<&'a SuiteInputs>,
    reference: &'a LoadedKernel,
    base: Option<Bindings>,
    configs: &'a [Config],
    next_seed: u64,
}

impl DefaultTests<'_> {
    fn plan(&self) -> Option<default_tests::DefaultTests<'_>> {
        Some(default_tests::DefaultTests {
            inputs: self.inputs?,
            params: &self.reference.params,
            problem_size: &self.reference.kernel.geometry.problem_size,
            base: self.base.clone()?,
            configs: self.configs,
            next_seed: self.next_seed,
        })
    }

    fn odd(&self) -> anyhow::Result<Option<ExtraTest>> {
        Ok(self.plan().map(|p| p.odd()).transpose()?.flatten())
    }

    /// The large test, sized for `device` (read from the driver: call once the tuner has started).
    fn large(&self, device: usize) -> anyhow::Result<Option<ExtraTest>> {
        let Some(plan) = self.plan() else {
            return Ok(None);
        };
        let scale = kt_tuner::session::device_scale(device)?;
        Ok(plan.large(&scale)?)
    }

    /// The `bench` and `past-2^24` tests, sized for `device` and for the reference's time (timed once at
    /// the largest test already there); a bench test no larger than a test already there is left out, and
    /// so is a past-2^24 test over the time budget (with a note saying why).
    fn real_sizes(
        &self,
        device: usize,
        tests: &TestSet,
        tuner: &mut Tuner,
        ref_config: &Config,
    ) -> anyhow::Result<(Vec<ExtraTest>, Vec<String>)> {
        let Some(plan) = self.plan() else {
            return Ok((vec![], vec![]));
        };
        let scale = kt_tuner::session::device_scale(device)?;
        let budget = self.time_budget(tests, tuner, ref_config)?;
        let mut extra = Vec::new();
        let mut notes = Vec::new();
        if let Some(bench) = plan.bench(&scale, budget.as_ref())?
            && tests
                .tests
                .iter()
                .all(|t| t.scalars() != bench.test.scalars())
        {
            extra.push(bench);
        }
        let existing: Vec<_> = tests
            .tests
            .iter()
            .chain(extra.iter().map(|e| &e.test))
            .cloned()
            .collect();
        if let Some(past) = plan.past_float_index(&scale, &existing)? {
            match budget.as_ref().filter(|b| !b.fits(&past.test)) {
                Some(b) => notes.push(format!(
                    "the {} test is left out: {}; give larger sizes with --size to test there",
                    past.description,
                    b.over(&past.test)
                )),
                None => extra.push(past),
            }
        }
        Ok((extra, notes))
    }

    /// The reference timed once at the largest test of `tests` (None without tests).
    fn time_budget(
        &self,
        tests: &TestSet,
        tuner: &mut Tuner,
        ref_config: &Config,
    ) -> anyhow::Result<Option<default_tests::TimeBudget>> {
        let Some(largest) = tests.tests.iter().max_by_key(|t| t.array_bytes()) else {
            return Ok(None);
        };
        let ms = tuner
            .time_launch(&self.reference.kernel, ref_config, largest)
            .context("timing the reference at the largest default test, to size the bench tests")?;
        Ok(Some(default_tests::TimeBudget {
            measured_bytes: largest.array_bytes(),
            measured_ms: ms,
            measured_at: format!("test {}", largest.id),
            budget_ms: default_tests::DEFAULT_TEST_LAUNCH_MS,
        }))
    }

    fn warnings(&self, tests: &TestSet) -> Vec<String> {
        let empty = SuiteInputs::default();
        let inputs = self.reference.inputs.as_ref().unwrap_or(&empty);
        let sizes = default_tests::size_names(
            inputs,
            &self.reference.params,
            &self.reference.kernel.geometry.problem_size,
        );
        default_tests::power_of_two_warnings(&tests.tests, &sizes)
    }
}

/// What verification does about a kernel's state across launches, when it keeps any.
fn globals_note(kernel: &kt_cuda::Kernel) -> Option<String> {
    if kernel.mutable_globals.is_empty() {
        return None;
    }
    let names: Vec<String> = kernel
        .mutable_globals
        .iter()
        .map(|g| format!("{} `{}`", g.space, g.name))
        .collect();
    Some(format!(
        "the candidate writes {}: state that outlives a launch. Its module is reloaded before every \
         test, so each test starts from the globals' initial values; reruns of one test still share them",
        names.join(", ")
    ))
}

/// `gen1, gen2, gen3; odd (next primes): n=10009; large (fills the GPU): n=2621568`.
fn describe_tests(tests: &TestSet, extras: &[String]) -> String {
    let seeded: Vec<&str> = tests
        .tests
        .iter()
        .map(|t| t.id.as_str())
        .filter(|id| !matches!(*id, "odd" | "large" | "bench" | "past-2^24"))
        .collect();
    std::iter::once(seeded.join(", "))
        .chain(extras.iter().cloned())
        .collect::<Vec<_>>()
        .join("; ")
}

fn print_report(report: &VerifyReport, sanitizer: Option<&SanitizerReport>, passed: bool) {
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
            Verdict::KernelNotFound { .. }
            | Verdict::Nondeterministic { .. }
            | Verdict::OutOfBounds { .. }
            | Verdict::TimedRunDiffers { .. }
            | Verdict::ImpossibleTime { .. } => println!("  FAIL {}", t.verdict.reason()),
            _ => {}
        }
    }
    for line in sanitizer.map(SanitizerReport::lines).unwrap_or_default() {
        println!("{line}");
    }
    println!(
        "{}",
        if passed {
            "all tests passed"
        } else {
            "verification FAILED"
        }
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: VerifyArgs,
    }

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn args(extra: &[&str]) -> VerifyArgs {
        let mut argv = vec!["verify"];
        argv.extend_from_slice(extra);
        Cli::parse_from(argv).args
    }

    #[test]
    fn the_default_tests_add_an_odd_inner_dimension_unless_seeds_only() {
        let file = root().join("naive-kernels/matmul.cu");
        let reference = load_kernel(&file, None, &[]).unwrap();
        let inputs = reference.inputs.as_ref().unwrap();
        let configs = [config_from_block(&[], [16, 16, 1])];
        let extras = DefaultTests {
            inputs: Some(inputs),
            reference: &reference,
            base: Some(inputs.values_at(SizeChoice::Test, &BTreeMap::new())),
            configs: &configs,
            next_seed: 4,
        };
        let odd = extras.odd().unwrap().unwrap();
        // the seeded tests' inner dimension is even (100): the odd test's is not
        assert_eq!(odd.test.scalars()["A_width"], 101.0);
        let source = TestSource::Generate {
            size: SizeChoice::Test,
            count: 3,
        };
        let mut tests = load_tests(&reference, source, &BTreeMap::new(), &configs).unwrap();
        tests.tests.push(odd.test);
        assert!(extras.warnings(&tests).is_empty());
        assert_eq!(
            describe_tests(&tests, &[odd.description]),
            "gen1, gen2, gen3; odd (next primes): A_width=101 A_height=79 B_width=97"
        );
        let seeds_only = DefaultTests {
            inputs: None,
            ..extras
        };
        assert!(seeds_only.odd().unwrap().is_none());
    }

    #[test]
    fn a_block_flag_takes_one_to_three_sizes() {
        assert_eq!(parse_block("16,16").unwrap(), [16, 16, 1]);
        assert!(parse_block("1,2,3,4").is_err());
        assert!(parse_block("x").is_err());
    }

    #[test]
    fn version_two_of_a_file_is_checked_against_version_one_with_its_own_launch() {
        let file = root().join("tests/corpus/programs/bench-style/softmax_forward.cu");
        let f = file.to_string_lossy().to_string();
        let a = args(&[
            &f,
            &f,
            "--reference-kernel",
            "softmax_forward_kernel1",
            "--kernel",
            "softmax_forward_kernel2",
        ]);
        let reference = load_kernel(&a.reference, reference_name(&a).as_deref(), &[]).unwrap();
        assert_eq!(reference.kernel.kernel_name, "softmax_forward_kernel1");
        let (cand, config) = candidate_with_overrides(&a, &reference).unwrap();
        assert_eq!(cand.kernel.kernel_name, "softmax_forward_kernel2");
        assert!(
            cand.sidecar
                .as_ref()
                .unwrap()
                .ends_with("softmax_forward.softmax_forward_kernel2.toml")
        );
        assert_eq!(
            cand.kernel.geometry.shared_mem.as_deref(),
            Some("block_size_x * 4")
        );
        let scalars = BTreeMap::from([("N".to_string(), 37.0), ("C".to_string(), 1001.0)]);
        let dims = cand.kernel.geometry.launch(&config, &scalars).unwrap();
        assert_eq!(
            (dims.block, dims.grid, dims.shared_mem),
            ([256, 1, 1], [37, 1, 1], 1024)
        );
    }

    #[test]
    fn launch_flags_override_the_candidates_launch() {
        let file = root().join("naive-kernels/matrixAdd.cu");
        let f = file.to_string_lossy().to_string();
        let a = args(&[
            &f,
            &f,
            "--block",
            "32,8",
            "--param",
            "block_size_y=4",
            "--shared-mem",
            "block_size_x*8",
        ]);
        let reference = load_kernel(&a.reference, None, &[]).unwrap();
        let (cand, config) = candidate_with_overrides(&a, &reference).unwrap();
        assert_eq!(config.get("block_size_x"), Some(32));
        assert_eq!(config.get("block_size_y"), Some(4));
        assert_eq!(
            cand.kernel.geometry.shared_mem.as_deref(),
            Some("block_size_x*8")
        );
        // same signature: the tests' arguments as they are
        assert_eq!(cand.kernel.arguments, None);
    }

    #[test]
    fn the_reductions_output_follows_the_candidates_block_size() {
        let file = root().join("naive-kernels/reduce_sum.cu");
        let f = file.to_string_lossy().to_string();
        let a = args(&[&f, &f, "--param", "block_size_x=128"]);
        let mut reference = load_kernel(&a.reference, None, &[]).unwrap();
        reference.size_arrays_per_configuration();
        let (cand, config) = candidate_with_overrides(&a, &reference).unwrap();
        assert_eq!(config.get("block_size_x"), Some(128));
        assert_eq!(
            cand.kernel
                .geometry
                .array_sizes
                .get("output")
                .map(String::as_str),
            Some("ceil_div(n, block_size_x)")
        );
        let configs = [config_from_block(&[], [256, 1, 1]), config];
        let source = TestSource::Generate {
            size: SizeChoice::Test,
            count: 1,
        };
        let tests = load_tests(&reference, source, &BTreeMap::new(), &configs).unwrap();
        let out = tests.tests[0]
            .arrays()
            .find(|a| a.name == "output")
            .unwrap();
        assert_eq!(out.elements, 10007u64.div_ceil(128));
    }
}
