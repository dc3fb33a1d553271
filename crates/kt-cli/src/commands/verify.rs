//! `kt verify REFERENCE.cu CANDIDATE.cu`: run both kernels on the same inputs and compare every output; a
//! candidate that verifies is rerun twice to catch races, and `--sanitize` runs compute-sanitizer on it.
//! The candidate may launch its own way (its own sidecar, or `--block` / `--problem-size` / `--grid-div-*` /
//! `--shared-mem`), take its parameters in another order, or need a scalar the reference lacks (`--arg`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use kt_tuner::host::sanitize::{SanitizerReport, run_tools};
use kt_tuner::input::default_tests::PAST_2GIB;
use kt_tuner::model::args::TestSet;
use kt_tuner::model::space::Config;
use kt_tuner::session::{Tuner, TunerConfig, Verdict, VerifyReport};

use super::kernel_input::{LaunchFlags, default_cache_dir, parse_sizes};
use pair::{Pair, load_pair};
use report::{Outcome, describe_tests, print_json, print_report};
use test_plan::{add_device_sized_tests, tests_before_gpu};

mod pair;
mod report;
mod test_plan;

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
    /// Read inputs from a tests directory instead of generating them.
    #[arg(long = "tests-dir", value_name = "DIR")]
    pub tests: Option<PathBuf>,
    /// Generate inputs at the sidecar's `bench` size (default: its small `test` size).
    #[arg(long, conflicts_with = "test_size")]
    pub bench_size: bool,
    /// Generate inputs at the sidecar's small `test` size (the default of `kt verify`).
    #[arg(long)]
    pub test_size: bool,
    /// How many seeded tests at the chosen size (`--tests N`, as on every command).
    #[arg(long, alias = "tests", value_name = "N", default_value_t = 3,
          value_parser = super::tests_flag::count::<usize>)]
    pub tests_count: usize,
    /// Only the seeded tests: none of the default extra tests (`odd`, `large`, …).
    #[arg(long)]
    pub seeds_only: bool,
    /// The quick set for fast iteration: no `bench`, `past-2^24` and `past-2GiB` tests (the seeded ones
    /// and the other extras still run).
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
Default tests, when inputs are generated from the reference's sidecar (no --tests-dir):
  gen1..genN      --tests-count seeds at the sidecar's `test` size (--bench-size: its `bench` size);
  odd             every size (an integer scalar named in the problem size or an array's size) moved to
                  the next prime above it: catches kernels that assume whole tiles or an even dimension;
  large-values    the seeded sizes with every floating-point input the sidecar draws from randn drawn
                  with a standard deviation of 100, compared where the reference is finite: catches a
                  softmax without its max shift, a tanh through exp, accumulators that overflow (randn
                  stays within 7);
  varied-scalars  the seeded sizes with every scalar that is no size at a value the sidecar never gives
                  it: a float through v*0.7071+0.1 (ranges stay ordered, the value has a full mantissa),
                  an integer other than 0 or 1 to 2v+1: catches a scalar rounded to bfloat16 or half, a
                  kernel specialised to the sidecar's values;
  skewed          the seeded sizes with every integer input the sidecar draws (randint:LO:HI) filled with
                  LO: catches counters too narrow for one value's count (a histogram of all-zero bytes);
  large           the problem's dimensions (the sizes its problem size names) doubled until it covers the
                  GPU several times over (8 x SMs x threads per SM), each at most its `bench` value, the
                  test within an eighth of the GPU's memory: catches races that a few blocks do not show;
  bench           every size and scalar at its `bench` value, what the kernel is timed at (the sizes
                  halved until it fits an eighth of the GPU's memory): catches kernels right only at
                  small sizes, or only at the test's scalars (an iteration cap past max_iter = 100);
  past-2^24       an output whose length follows one size grown past 2^24 elements (odd): catches an
                  index computed through `float`, exact only up to 2^24 (left out when another test is
                  that large);
  past-2GiB       one size grown (odd) until an array passes 2^31 bytes, where the size's integer type
                  holds it and the test fits a quarter of the GPU's memory (and, with the other tests,
                  three quarters; left out with a note where another process holds so much of the
                  GPU that it finds no room): catches 32-bit byte offsets and flattened indices.
  The reference is timed at the largest of the other tests (for past-2GiB again at the bench test, when
  that is larger); bench is halved, and past-2^24 and past-2GiB left out, where its launch would take over
  a second (estimated as growing with the square of the data), and the output says so. varied-scalars
  and skewed use values the reference was never given: where the reference itself fails on one (a launch
  error, a write outside its arrays, no output written), it is left out with a note.
--quick leaves out bench, past-2^24 and past-2GiB; --seeds-only runs only the seeded tests. A size that is
a multiple of 64 in every test is a warning. Every array sits between guard bytes: a write past either end
fails.";

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    if args.dry_run {
        return Ok(super::dry_run::report(dry_run(&args)));
    }
    let pair = load_pair(&args)?;
    let sizes = parse_sizes(&args.sizes)?;
    let configs = [pair.ref_config.clone(), pair.cand_config.clone()];
    let (mut planned, extras) = tests_before_gpu(&args, &pair, &sizes, &configs)?;
    let config = TunerConfig {
        cache_dir: default_cache_dir(),
        ..TunerConfig::default()
    };
    let mut tuner = Tuner::new(config.clone()).context("kt verify runs both kernels on a GPU and could not start one (it needs an NVIDIA GPU, its driver and NVRTC; `kt doctor` checks them)")?;
    // before the device-sized tests: the reference is timed at the largest test there, never a dropped one
    for note in planned.drop_failing_derived(&mut tuner, &pair)? {
        eprintln!("note: {note}");
    }
    add_device_sized_tests(
        &args,
        &extras,
        config.device,
        (&mut tuner, &pair.ref_config),
        &mut planned,
    )?;
    let warnings = extras.warnings(&planned.tests);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if !args.json {
        println!(
            "tests: {}",
            describe_tests(&planned.tests, &planned.described)
        );
    }
    let (report, rerun) = match verify_and_rerun(&mut tuner, &pair, &planned.tests) {
        // the GPU is shared and the largest test found no room: the verification goes on without it
        Err(e) if no_room_for(&e) == Some(PAST_2GIB) => {
            let Some(description) = planned.leave_out(PAST_2GIB) else {
                return Err(e);
            };
            eprintln!("note: the {description} test is left out: {e:#}");
            drop(tuner);
            tuner = Tuner::new(config.clone()).context("starting the tuner again")?;
            verify_and_rerun(&mut tuner, &pair, &planned.tests)?
        }
        r => r?,
    };
    drop(tuner);
    let (tests, described) = (planned.tests, planned.described);
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

/// `--dry-run`: both kernels at their configurations and the tests, checked without a GPU.
fn dry_run(args: &VerifyArgs) -> anyhow::Result<String> {
    let pair = load_pair(args)?;
    let sizes = parse_sizes(&args.sizes)?;
    let configs = [pair.ref_config.clone(), pair.cand_config.clone()];
    let (planned, extras) = tests_before_gpu(args, &pair, &sizes, &configs)?;
    let (tests, described) = (&planned.tests, &planned.described);
    let later = if extras.inputs.is_none() {
        ""
    } else if args.quick {
        "; large: sized once the GPU is known"
    } else {
        "; large, bench, past-2^24 and past-2GiB: sized once the GPU is known"
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
        format!("tests: {}{later}", describe_tests(tests, described)),
        "dry run: nothing compiled or run; without --dry-run this verifies on the GPU".to_string(),
    ]
    .join("\n"))
}

/// Verifies the candidate; one that verified is run twice more: differing reruns are a race.
/// The test the GPU had no room for, where that is what `e` says.
fn no_room_for(e: &anyhow::Error) -> Option<&str> {
    e.chain()
        .find_map(|c| c.downcast_ref::<kt_tuner::TunerError>())
        .and_then(|t| t.no_room_for())
}

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
