//! The tests `kt verify` runs: the seeded ones (or `--tests-dir DIR`), then the default extras made from the
//! reference's sidecar (see `DEFAULT_TESTS_HELP`): odd, large-values, varied-scalars and skewed before a GPU
//! is asked for, large, bench, past-2^24 and past-2GiB once the device is known. The derived ones
//! (varied-scalars, skewed: values the sidecar never gave) are kept only where the reference runs right on
//! them (`Planned::drop_failing_derived`).

use std::collections::BTreeMap;

use anyhow::Context as _;
use kt_tuner::input::default_tests::{self, ExtraTest, Fitted};
use kt_tuner::input::{LoadedKernel, TestSource, load_tests};
use kt_tuner::model::args::{KernelTest, SizeChoice, SuiteInputs, TestSet};
use kt_tuner::model::expr::Bindings;
use kt_tuner::model::space::Config;
use kt_tuner::session::Tuner;

use super::VerifyArgs;
use super::pair::Pair;

/// The tests of a verification as they are planned: the test set, what each extra test is (for the
/// user), and the derived extras (id and description), which the reference must run right on to be kept.
pub(super) struct Planned {
    pub(super) tests: TestSet,
    pub(super) described: Vec<String>,
    derived: Vec<(String, String)>,
    /// Each extra test's id and description.
    extras: Vec<(String, String)>,
}

impl Planned {
    fn add(&mut self, extra: ExtraTest) {
        if extra.derived {
            self.derived
                .push((extra.test.id.clone(), extra.description.clone()));
        }
        self.extras
            .push((extra.test.id.clone(), extra.description.clone()));
        self.described.push(extra.description);
        self.tests.tests.push(extra.test);
    }

    /// Leaves the extra test `id` out; its description, if it was planned.
    pub(super) fn leave_out(&mut self, id: &str) -> Option<String> {
        let i = self.extras.iter().position(|(e, _)| e == id)?;
        let (_, description) = self.extras.remove(i);
        self.tests.tests.retain(|t| t.id != id);
        if let Some(i) = self.described.iter().position(|d| *d == description) {
            self.described.remove(i);
        }
        Some(description)
    }

    /// Runs the reference alone on every derived test: one it fails on (a launch error or fault, a write
    /// outside its arrays, no output written) is left out, and the note returned says why. A derived
    /// test's values are ones the sidecar never gave, so the reference may not be defined there; the
    /// seeded tests' reference failures stay errors of the verification.
    pub(super) fn drop_failing_derived(
        &mut self,
        tuner: &mut Tuner,
        pair: &Pair,
    ) -> anyhow::Result<Vec<String>> {
        self.drop_derived_where(|t| {
            tuner
                .reference_failure(&pair.reference.kernel, &pair.ref_config, t)
                .with_context(|| format!("running the reference on the {} test", t.id))
        })
    }

    /// Leaves out every derived test `failure` gives a reason for; the notes saying so.
    pub(super) fn drop_derived_where(
        &mut self,
        mut failure: impl FnMut(&KernelTest) -> anyhow::Result<Option<String>>,
    ) -> anyhow::Result<Vec<String>> {
        let mut notes = Vec::new();
        for (id, description) in std::mem::take(&mut self.derived) {
            let Some(test) = self.tests.tests.iter().find(|t| t.id == id) else {
                continue;
            };
            // a test the reference runs right on is kept, and not run alone again by a later call
            let Some(why) = failure(test)? else {
                continue;
            };
            self.tests.tests.retain(|t| t.id != id);
            if let Some(i) = self.described.iter().position(|d| *d == description) {
                self.described.remove(i);
            }
            notes.push(format!(
                "the {description} test is left out: the reference fails there ({why}); its values are \
                 ones the sidecar never gives, where the reference need not be defined"
            ));
        }
        Ok(notes)
    }
}

/// The tests made before a GPU is asked for: the seeded ones and the extras sized without the device (odd,
/// large-values, varied-scalars, skewed), with the plan of the device-sized ones.
pub(super) fn tests_before_gpu<'a>(
    args: &VerifyArgs,
    pair: &'a Pair,
    sizes: &BTreeMap<String, f64>,
    configs: &'a [Config],
) -> anyhow::Result<(Planned, DefaultTests<'a>)> {
    let tests = load_tests(&pair.reference, test_source(args), sizes, configs)?;
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
    let mut planned = Planned {
        tests,
        described: Vec::new(),
        extras: Vec::new(),
        derived: Vec::new(),
    };
    for extra in [
        extras.odd()?,
        extras.large_values()?,
        extras.varied_scalars()?,
        extras.skewed()?,
    ]
    .into_iter()
    .flatten()
    {
        planned.add(extra);
    }
    Ok((planned, extras))
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

/// The large test, and (unless `--quick`) the bench-size, past-2^24 and past-2GiB ones, sized to what the
/// device's memory and the reference's run time allow (`reference`: the tuner and the reference's
/// configuration, to time it): so once the tuner has started.
pub(super) fn add_device_sized_tests(
    args: &VerifyArgs,
    extras: &DefaultTests,
    device: usize,
    reference: (&mut Tuner, &Config),
    planned: &mut Planned,
) -> anyhow::Result<()> {
    if let Some(large) = extras.large(device)? {
        planned.add(large);
    }
    if !args.quick {
        let (tuner, ref_config) = reference;
        let (extra, notes) = extras.real_sizes(device, &planned.tests, tuner, ref_config)?;
        for note in notes {
            eprintln!("note: {note}");
        }
        for extra in extra {
            planned.add(extra);
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

    /// The varied-scalars test (every scalar that is no size at a value the sidecar never gives it).
    pub(super) fn varied_scalars(&self) -> anyhow::Result<Option<ExtraTest>> {
        Ok(self
            .plan()
            .map(|p| p.varied_scalars())
            .transpose()?
            .flatten())
    }

    /// The skewed test (every integer input the sidecar draws filled with one value).
    pub(super) fn skewed(&self) -> anyhow::Result<Option<ExtraTest>> {
        Ok(self.plan().map(|p| p.skewed()).transpose()?.flatten())
    }

    /// The large test, sized for `device` (read from the driver: call once the tuner has started).
    pub(super) fn large(&self, device: usize) -> anyhow::Result<Option<ExtraTest>> {
        let Some(plan) = self.plan() else {
            return Ok(None);
        };
        let scale = kt_tuner::session::device_scale(device)?;
        Ok(plan.large(&scale)?)
    }

    /// The `bench`, `past-2^24` and `past-2GiB` tests, sized for `device` and for the reference's time (timed
    /// once at the largest test already there); a bench test no larger than a test already there is left
    /// out, and so is a past test over the time budget or the device's memory (with a note saying why).
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
        let mut budget = self.time_budget(&tests.tests, tuner, ref_config)?;
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
        let existing = |extra: &[ExtraTest]| -> Vec<KernelTest> {
            tests
                .tests
                .iter()
                .chain(extra.iter().map(|e| &e.test))
                .cloned()
                .collect()
        };
        if let Some(past) = plan.past_float_index(&scale, &existing(&extra))? {
            match budget.as_ref().filter(|b| !b.fits(&past.test)) {
                Some(b) => notes.push(format!(
                    "the {} test is left out: {}; give larger sizes with --size to test there",
                    past.description,
                    b.over(&past.test)
                )),
                None => extra.push(past),
            }
        }
        let all = existing(&extra);
        match plan.past_2gib(&scale, &all)? {
            Some(Fitted::LeftOut(note)) => notes.push(note),
            Some(Fitted::Test(past)) => {
                match self.over_budget(&past.test, &mut budget, &all, tuner, ref_config)? {
                    Some(why) => notes.push(format!(
                        "the {} test is left out: {why}; to test there alone, give its size with \
                         --size and --tests 1 --seeds-only",
                        past.description
                    )),
                    None => extra.push(past),
                }
            }
            None => {}
        }
        Ok((extra, notes))
    }

    /// Why `test` is over the reference's time budget, None when within it. The first estimate grows the
    /// time at the largest test before the bench test with the square of the data; before leaving a test
    /// out, the reference is timed again at the largest test now there (the bench test, when larger), which
    /// a far larger test is estimated better from.
    fn over_budget(
        &self,
        test: &KernelTest,
        budget: &mut Option<default_tests::TimeBudget>,
        existing: &[KernelTest],
        tuner: &mut Tuner,
        ref_config: &Config,
    ) -> anyhow::Result<Option<String>> {
        let Some(b) = budget.as_ref().filter(|b| !b.fits(test)) else {
            return Ok(None);
        };
        let largest = existing.iter().map(|t| t.array_bytes()).max().unwrap_or(0);
        if largest > b.measured_bytes {
            *budget = self.time_budget(existing, tuner, ref_config)?;
        }
        Ok(budget
            .as_ref()
            .filter(|b| !b.fits(test))
            .map(|b| b.over(test)))
    }

    /// The reference timed once at the largest of `tests` (None without tests).
    fn time_budget(
        &self,
        tests: &[KernelTest],
        tuner: &mut Tuner,
        ref_config: &Config,
    ) -> anyhow::Result<Option<default_tests::TimeBudget>> {
        let Some(largest) = tests.iter().max_by_key(|t| t.array_bytes()) else {
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
