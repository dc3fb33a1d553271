//! GPU tests: the full self-test (suite kernels tuned and verified, every failure mode of a broken kernel
//! caught while tuning continues). They are ignored unless run with --include-ignored on a GPU
//! (experiments/gpu-check.sh). The worker is this test executable itself, re-executed with only `gpu_worker_entry` selected.

#![allow(clippy::unwrap_used)]

mod gpu_support;

#[test]
fn gpu_worker_entry() {
    gpu_support::serve_if_worker();
}

#[test]
#[ignore = "needs a GPU; experiments/gpu-check.sh runs it (KT_GPU=1, --include-ignored)"]
fn selftest_passes_every_check_on_the_gpu() {
    let config = gpu_support::config();
    let checks = kt_tuner::host::selftest::run(config).expect("a GPU session");
    for c in &checks {
        println!(
            "{} {}: {}",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    assert!(checks.iter().all(|c| c.passed), "some checks failed");
}

fn write_f32_npy(path: &std::path::Path, values: &[f32]) {
    let mut bytes =
        kt_record::tests_format::npy::header(kt_record::DType::Float32, &[values.len() as u64]);
    bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(path, bytes).unwrap();
}

fn read_f32_npy(path: &std::path::Path) -> Vec<f32> {
    let info = kt_record::tests_format::npy::read_header(path).unwrap();
    assert_eq!(info.dtype, kt_record::DType::Float32);
    std::fs::read(path).unwrap()[info.data_offset as usize..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// One vectorAdd test in `dir` (`dir/t0`): inputs `a` and `b`, output `c` starting as `c0` (it may be longer
/// than `n`), and vectorAdd itself with its one configuration, block size 256.
fn vector_add(
    dir: &std::path::Path,
    a: &[f32],
    b: &[f32],
    c0: &[f32],
) -> (
    kt_tuner::TestSet,
    kt_tuner::session::TunableKernel,
    kt_tuner::Config,
) {
    use kt_tuner::session::{TunableKernel, config_from_block};
    use kt_tuner::{ParamSpec, TestSet, TunableParam};
    let n = a.len();
    let t = dir.join("t0");
    std::fs::create_dir_all(t.join("args")).unwrap();
    write_f32_npy(&t.join("args/a.npy"), a);
    write_f32_npy(&t.join("args/b.npy"), b);
    write_f32_npy(&t.join("args/c.npy"), c0);
    let manifest = serde_json::json!({
        "format": 1, "kernel": "vectorAdd", "seed": 1,
        "args": [
            {"name": "a", "kind": "array", "dtype": "float32", "shape": [n], "file": "args/a.npy"},
            {"name": "b", "kind": "array", "dtype": "float32", "shape": [n], "file": "args/b.npy"},
            {"name": "c", "kind": "array", "dtype": "float32", "shape": [c0.len()], "file": "args/c.npy"},
            {"name": "n", "kind": "scalar", "dtype": "int32", "value": n}
        ],
        "outputs": ["c"]
    });
    std::fs::write(t.join("manifest.json"), manifest.to_string()).unwrap();
    let f32p = |name: &str| ParamSpec {
        name: name.into(),
        is_pointer: true,
        dtype: Some((kt_record::DType::Float32, 1)),
    };
    let specs = vec![
        f32p("a"),
        f32p("b"),
        f32p("c"),
        ParamSpec {
            name: "n".into(),
            is_pointer: false,
            dtype: Some((kt_record::DType::Int32, 1)),
        },
    ];
    let tests = TestSet::load_dir(dir, &specs, &std::collections::BTreeMap::new()).unwrap();
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels/vectorAdd.cu"),
    )
    .unwrap();
    let mut kernel = TunableKernel::new(source, "vectorAdd", vec!["n".into()]);
    kernel.params = vec![TunableParam::new("block_size_x", [256])];
    let config = config_from_block(&kernel.params, [256, 1, 1]);
    (tests, kernel, config)
}

/// vectorAdd's reference run writes expected/c.npy equal to a + b computed here; `c` is 24 elements longer
/// than `n`, so those stay at their initial value and are reported as never written.
#[test]
#[ignore = "needs a GPU; experiments/gpu-check.sh runs it (KT_GPU=1, --include-ignored)"]
fn reference_run_of_vector_add_writes_expected_outputs_that_match_the_cpu() {
    use kt_tuner::TimingPolicy;
    let n = 1000usize;
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t0");
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let c0: Vec<f32> = vec![7.0; n + 24];
    let (tests, kernel, config) = vector_add(dir.path(), &a, &b, &c0);
    let mut tuner = gpu_support::tuner();
    let runs = tuner
        .run_reference(
            &kernel,
            &config,
            &tests,
            &[t.join("expected")],
            Some(TimingPolicy::default()),
        )
        .unwrap();
    assert_eq!(runs.len(), 1);
    let out = &runs[0].outputs;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].name, "c");
    assert_eq!(out[0].shape, vec![(n + 24) as u64]);
    assert_eq!(out[0].never_written, 24, "{out:?}");
    assert!(runs[0].timing.as_ref().unwrap().median_ms > 0.0);
    let got = read_f32_npy(&t.join("expected/c.npy"));
    assert_eq!(got.len(), n + 24);
    for i in 0..n {
        assert_eq!(got[i], a[i] + b[i], "element {i}");
    }
    assert!(got[n..].iter().all(|v| *v == 7.0));
    println!(
        "vectorAdd reference: {:.4} ms, {} never written",
        runs[0].timing.as_ref().unwrap().median_ms,
        out[0].never_written
    );
}

/// A profile through CUPTI inside the worker: vectorAdd over 2²⁴ floats reads two arrays and writes one, so
/// DRAM traffic is about 128 MiB read and 64 MiB written; the launch facts match the launch; the session
/// times launches as before afterwards (the profiler is switched off again).
#[test]
#[ignore = "needs a GPU; experiments/gpu-check.sh runs it (KT_GPU=1, --include-ignored)"]
fn a_launch_profiled_through_cupti_reports_traffic_and_launch_facts() {
    let n: usize = 1 << 24;
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - (i % 777) as f32).collect();
    let (tests, kernel, config) = vector_add(dir.path(), &a, &b, &vec![7.0; n]);
    let cupti = kt_tuner::worker::find_cupti().expect("CUPTI next to the CUDA toolkit");
    let mut tuner = gpu_support::tuner();
    let test = &tests.tests[0];
    let before = tuner.time_launches(&kernel, &config, test, 20).unwrap();
    let started = std::time::Instant::now();
    let report = tuner
        .count_launch(&kernel, &config, test, kt_profile::SUMMARY_METRICS, &cupti)
        .unwrap();
    let wall = started.elapsed().as_secs_f64();
    let again_started = std::time::Instant::now();
    let again = tuner
        .count_launch(&kernel, &config, test, kt_profile::SUMMARY_METRICS, &cupti)
        .unwrap();
    let again_wall = again_started.elapsed().as_secs_f64();
    println!(
        "first profile phases {:?}; second profile {:.3} s, phases {:?}",
        report.phases_ms, again_wall, again.phases_ms
    );
    let after = tuner.time_launches(&kernel, &config, test, 20).unwrap();
    for (name, value) in &report.values {
        println!("{name} = {value:?}");
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "CUPTI profile: {} passes, {:.1} ms in the worker, {:.3} s in all; launch {:.4} ms before, {:.4} ms after",
        report.passes,
        report.ms,
        wall,
        median(&before),
        median(&after)
    );
    let get = |name: &str| {
        report
            .values
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    let bytes = (n * 4) as f64;
    let read = get("dram__bytes_read.sum");
    let written = get("dram__bytes_write.sum");
    assert!((read / (2.0 * bytes) - 1.0).abs() < 0.1, "read {read}");
    // a little more is written back than the output's size (partial lines, write-allocate)
    assert!((written / bytes - 1.0).abs() < 0.25, "written {written}");
    assert_eq!(get("launch__block_size"), 256.0);
    assert_eq!(get("launch__grid_size"), (n / 256) as f64);
    assert!(get("launch__registers_per_thread") > 0.0);
    assert!(get("dram__throughput.avg.pct_of_peak_sustained_elapsed") > 10.0);
    assert!(report.passes >= 1);
    let known = report.values.iter().filter(|(_, v)| v.is_some()).count();
    assert_eq!(
        known,
        report.values.len(),
        "every summary metric has a value"
    );
    assert!(
        median(&after) < 1.1 * median(&before),
        "launches after the profile are not slower"
    );
}

/// A test sent to the worker again after its files changed: expected values written after a first tuning
/// are read (wrong ones fail the reference, right ones pass), an expected file rewritten in place is read
/// again, and so is an input rewritten in place, although the test's description never changes.
#[test]
#[ignore = "needs a GPU; experiments/gpu-check.sh runs it (KT_GPU=1, --include-ignored)"]
fn a_test_whose_files_change_is_read_again_and_one_whose_files_do_not_keeps_its_inputs() {
    use kt_tuner::{ParamSpec, TestSet, TuneOptions};
    let n = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t0");
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - (i % 777) as f32).collect();
    let (tests, kernel, _) = vector_add(dir.path(), &a, &b, &vec![0.0; n]);
    let mut tuner = gpu_support::tuner();
    let options = TuneOptions {
        measure_peak: false,
        ..TuneOptions::default()
    };
    let tune = |tuner: &mut kt_tuner::Tuner, tests: &TestSet| {
        tuner.tune(&kernel, tests, &options, &mut |_| {})
    };
    let first = tune(&mut tuner, &tests).unwrap();
    assert!(first.best.is_some_and(|m| m.verdict.is_ok()));

    // expected values recorded in the manifest, as kt transform writes them after its baseline
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.join("manifest.json")).unwrap()).unwrap();
    manifest["expected"] = serde_json::json!({"c": "expected/c.npy"});
    std::fs::write(t.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::create_dir_all(t.join("expected")).unwrap();
    let specs: Vec<ParamSpec> = ["a", "b", "c"]
        .iter()
        .map(|name| ParamSpec {
            name: name.to_string(),
            is_pointer: true,
            dtype: Some((kt_record::DType::Float32, 1)),
        })
        .chain([ParamSpec {
            name: "n".into(),
            is_pointer: false,
            dtype: Some((kt_record::DType::Int32, 1)),
        }])
        .collect();
    let load = || TestSet::load_dir(dir.path(), &specs, &Default::default()).unwrap();
    let sum = |x: &[f32], y: &[f32], plus: f32| -> Vec<f32> {
        x.iter().zip(y).map(|(p, q)| p + q + plus).collect()
    };
    let wait_for_a_new_mtime = || std::thread::sleep(std::time::Duration::from_millis(20));

    write_f32_npy(&t.join("expected/c.npy"), &sum(&a, &b, 1.0));
    let wrong = tune(&mut tuner, &load());
    assert!(
        matches!(wrong, Err(kt_tuner::TunerError::Reference { .. })),
        "expected values one too high must fail the reference: {wrong:?}"
    );

    wait_for_a_new_mtime();
    write_f32_npy(&t.join("expected/c.npy"), &sum(&a, &b, 0.0));
    let right = tune(&mut tuner, &load()).unwrap();
    assert!(right.best.is_some_and(|m| m.verdict.is_ok()));

    // the same test, unchanged: sent again with nothing to read (still right)
    let again = tune(&mut tuner, &load()).unwrap();
    assert!(again.best.is_some_and(|m| m.verdict.is_ok()));

    // an input rewritten in place, with its new sum expected: the old input kept would fail the reference
    wait_for_a_new_mtime();
    let a2: Vec<f32> = a.iter().map(|v| v * 2.0 + 1.0).collect();
    write_f32_npy(&t.join("args/a.npy"), &a2);
    write_f32_npy(&t.join("expected/c.npy"), &sum(&a2, &b, 0.0));
    let rewritten = tune(&mut tuner, &load()).unwrap();
    assert!(rewritten.best.is_some_and(|m| m.verdict.is_ok()));
}
