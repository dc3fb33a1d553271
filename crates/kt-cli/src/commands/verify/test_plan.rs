//! The tests `kt verify` runs: the seeded ones (or `--tests-dir DIR`), then the default extras made from the
//! reference's sidecar (see `DEFAULT_TESTS_HELP`): odd and large-values before a GPU is asked for, large,
//! bench and past-2^24 once the device is known.

use std::collections::BTreeMap;

use anyhow::Context as _;
use kt_tuner::input::default_tests::{self, ExtraTest};
use kt_tuner::input::{LoadedKernel, TestSource, load_tests};
use kt_tuner::model::args::{SizeChoice, SuiteInputs, TestSet};
use kt_tuner::model::expr::Bindings;
use kt_tuner::model::space::Config;
use kt_tuner::session::Tuner;

use super::VerifyArgs;
use super::pair::Pair;

/// The tests made before a GPU is asked for: the seeded ones and the odd one (the large, bench and
/// past-2^24 ones are sized for the device), with the plan of the extra tests and their descriptions.
pub(super) fn tests_before_gpu<'a>(
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
    if let Some(wide) = extras.large_values()? {
        described.push(wide.description);
        tests.tests.push(wide.test);
    }
    Ok((tests, extras, described))
}

pub(super) fn size_choice(args: &VerifyArgs) -> SizeChoice {
    if args.bench_size {
        SizeChoice::Bench
    } else {
        SizeChoice::Test
    }
}

/// `--tests-dir DIR`, else the seeded tests at the chosen size.
pub(super) fn test_source(args: &VerifyArgs) -> TestSource<'_> {
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
pub(super) fn add_device_sized_tests(
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

/// The default test set's extra tests (see [`super::DEFAULT_TESTS_HELP`]), made from the reference's sidecar.
pub(super) struct DefaultTests<'a> {
    /// None: no extra tests (inputs from --tests, --seeds-only, or no sidecar).
    pub(super) inputs: Option<&'a SuiteInputs>,
    pub(super) reference: &'a LoadedKernel,
    pub(super) base: Option<Bindings>,
    pub(super) configs: &'a [Config],
    pub(super) next_seed: u64,
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

    pub(super) fn odd(&self) -> anyhow::Result<Option<ExtraTest>> {
        Ok(self.plan().map(|p| p.odd()).transpose()?.flatten())
    }

    /// The large-values test (inputs drawn a hundred times wider, compared where the reference is finite).
    pub(super) fn large_values(&self) -> anyhow::Result<Option<ExtraTest>> {
        Ok(self.plan().map(|p| p.large_values()).transpose()?.flatten())
    }

    /// The large test, sized for `device` (read from the driver: call once the tuner has started).
    pub(super) fn large(&self, device: usize) -> anyhow::Result<Option<ExtraTest>> {
        let Some(plan) = self.plan() else {
            return Ok(None);
        };
        let scale = kt_tuner::session::device_scale(device)?;
        Ok(plan.large(&scale)?)
    }

    /// The `bench` and `past-2^24` tests, sized for `device` and for the reference's time (timed once at
    /// the largest test already there); a bench test no larger than a test already there is left out, and
    /// so is a past-2^24 test over the time budget (with a note saying why).
    pub(super) fn real_sizes(
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

    pub(super) fn warnings(&self, tests: &TestSet) -> Vec<String> {
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
