//! The original kernel's outputs kept as the tests' expected outputs. `kt transform` makes its tests without
//! them (Stage 2 needs no GPU); once the baseline has run the original kernel, its outputs on every test are
//! written next to the inputs (`expected/`, recorded in each manifest, as Stage 2 does where it has a GPU)
//! and the session's tests are read again. From then on every tuning verifies each configuration against
//! them, checks the last timed launch, reruns the best for determinism and checks its time is possible, as
//! `kt tune` does; without them each tuning could only check its fastest configurations against the
//! original afterwards. A failure here keeps that check: the run goes on.
//!
//! This is Stage 2's reference run made late, on the tuner Stage 3 already holds: Stage 3's backend calls it
//! (`stage3/backend/original_outputs.rs`) and hands it the tuner and the tests, nothing of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kt_tuner::check::verify::Tolerance;
use kt_tuner::model::args::TestArg;
use kt_tuner::{Config, ParamSpec, TestSet, TimingPolicy, TimingStats, TunableKernel, Tuner};

use crate::stage2::record_in_manifest;
use crate::stage2::tuner_reference::reference_run;

/// Launches per test that give the manifest's `reference_time_ms` when the baseline's own times per test
/// are not at hand.
const TIMED_LAUNCHES: u32 = 3;

/// A run's tests directory and how its tests are read again once their expected outputs are written.
pub(crate) struct RunTests<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) kernel: &'a kt_cuda::Kernel,
    pub(crate) tolerances: &'a BTreeMap<String, Tolerance>,
}

/// Whether every output of every test has expected values.
pub(crate) fn tests_hold_expected(tests: &TestSet) -> bool {
    tests.tests.iter().all(|t| {
        t.args.iter().all(|a| match a {
            TestArg::Array(arr) => !arr.is_output || arr.expected.is_some(),
            TestArg::Scalar(_) => true,
        })
    })
}

/// Writes `original` (at `config`)'s outputs as every test's expected outputs and reloads the session's tests;
/// false when the tests already held them. `times_ms`: the baseline's median per test, recorded as each
/// manifest's `reference_time_ms` (the original is then not timed again); else a few launches time it.
pub(crate) fn keep_original_outputs(
    tuner: &mut Tuner,
    tests: &mut TestSet,
    place: &RunTests,
    original: &TunableKernel,
    config: &Config,
    times_ms: &[f64],
) -> Result<bool, String> {
    if tests_hold_expected(tests) {
        return Ok(false);
    }
    let dirs: Vec<PathBuf> = tests
        .tests
        .iter()
        .map(|t| place.dir.join(&t.id).join("expected"))
        .collect();
    let known_times = times_ms.len() == tests.tests.len() && times_ms.iter().all(|t| *t > 0.0);
    let timing = (!known_times).then(|| TimingPolicy::exactly(TIMED_LAUNCHES));
    let mut runs = tuner
        .run_reference(original, config, tests, &dirs, timing)
        .map_err(|e| format!("running the original kernel for expected outputs: {e}"))?;
    if known_times {
        for (run, ms) in runs.iter_mut().zip(times_ms) {
            run.timing = TimingStats::from_samples(&[*ms]);
        }
    }
    for (test, run) in tests.tests.iter().zip(runs) {
        let reference = reference_run(&test.id, vec![run]).map_err(|e| e.to_string())?;
        record_in_manifest(&place.dir.join(&test.id), &reference).map_err(|e| e.to_string())?;
    }
    let params = ParamSpec::from_kernel(place.kernel);
    *tests = TestSet::load_dir(place.dir, &params, place.tolerances)
        .map_err(|e| format!("reading the tests again: {e}"))?;
    Ok(tests_hold_expected(tests))
}

/// A run continued on another machine keeps its tests' manifests, and Stage 2's remake marked those whose
/// expected files did not travel (`stage2::EXPECTED_REMADE_MARK`): before the first tuning here, the
/// original kernel makes them again, at the times the manifests recorded. A failure leaves the check against
/// the original in place, as after a baseline.
pub(crate) fn remake_marked_expected(
    tuner: &mut Tuner,
    tests: &mut TestSet,
    place: &RunTests,
    original: &TunableKernel,
    config: &Config,
) {
    let mark = place.dir.join(crate::stage2::EXPECTED_REMADE_MARK);
    if !mark.is_file() {
        return;
    }
    let times: Vec<f64> = tests
        .tests
        .iter()
        .filter_map(|t| {
            let path = place.dir.join(&t.id).join("manifest.json");
            let text = std::fs::read_to_string(path).ok()?;
            serde_json::from_str::<kt_record::TestManifest>(&text)
                .ok()?
                .reference_time_ms
        })
        .collect();
    match keep_original_outputs(tuner, tests, place, original, config, &times) {
        Ok(_) => {
            let _ = std::fs::remove_file(&mark);
            tracing::info!("expected outputs made again from the original kernel on this machine");
        }
        Err(why) => tracing::warn!(
            reason = %why,
            "the tests keep no expected outputs; each tuning checks its fastest configurations against the original kernel instead"
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A tests directory with one test of `k(float* a, int n)`, `a` its output, with or without an expected
    /// file recorded in the manifest.
    fn tests(dir: &std::path::Path, with_expected: bool) -> TestSet {
        let t = dir.join("t0");
        std::fs::create_dir_all(t.join("args")).unwrap();
        std::fs::create_dir_all(t.join("expected")).unwrap();
        let mut npy = kt_record::tests_format::npy::header(kt_record::DType::Float32, &[4]);
        npy.extend([1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()));
        std::fs::write(t.join("args/a.npy"), &npy).unwrap();
        std::fs::write(t.join("expected/a.npy"), &npy).unwrap();
        let mut manifest = serde_json::json!({
            "format": 1, "kernel": "k", "seed": 1,
            "args": [
                {"name": "a", "kind": "array", "dtype": "float32", "shape": [4], "file": "args/a.npy"},
                {"name": "n", "kind": "scalar", "dtype": "int32", "value": 4}
            ],
            "outputs": ["a"]
        });
        if with_expected {
            manifest["expected"] = serde_json::json!({"a": "expected/a.npy"});
        }
        std::fs::write(t.join("manifest.json"), manifest.to_string()).unwrap();
        let kernel = kt_cuda::parse("__global__ void k(float* a, int n) { a[0] = n; }\n")
            .unwrap()
            .select_kernel(None)
            .unwrap()
            .clone();
        let params = ParamSpec::from_kernel(&kernel);
        TestSet::load_dir(dir, &params, &std::collections::BTreeMap::new()).unwrap()
    }

    #[test]
    fn tests_hold_expected_outputs_only_when_every_output_has_a_file() {
        let without = tempfile::tempdir().unwrap();
        assert!(!tests_hold_expected(&tests(without.path(), false)));
        let with = tempfile::tempdir().unwrap();
        assert!(tests_hold_expected(&tests(with.path(), true)));
    }
}
