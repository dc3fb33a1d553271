//! Unit tests of the export: the cache file's layout, the script's content and the directory it is written to.

use super::*;
use crate::export::import;
use crate::model::args::{ArrayArg, Distribution, ScalarArg};
use crate::model::outcome::{Measurement, Phases, Verdict};
use crate::model::space::TunableParam;
use crate::worker::protocol::DeviceInfo;
use kt_record::DType;

fn device() -> DeviceInfo {
    DeviceInfo {
        ordinal: 0,
        name: "NVIDIA H200".into(),
        uuid: "GPU-1".into(),
        pci_bus_id: String::new(),
        compute_capability: (9, 0),
        sm_count: 132,
        max_threads_per_block: 1024,
        max_threads_per_sm: 2048,
        max_shared_per_block: 49152,
        max_shared_per_block_optin: 232448,
        registers_per_block: 65536,
        l2_bytes: 60 << 20,
        total_memory: 1 << 30,
        driver_version: 13000,
        clock_khz: 0,
        context_ms: 0.0,
    }
}

fn cfg(x: i64, y: i64) -> Config {
    Config::ints([("block_size_x", x), ("block_size_y", y)])
}

fn ok(x: i64, y: i64, ms: f64) -> Measurement {
    let mut m = Measurement::synthetic(cfg(x, y), Verdict::Ok, Some(ms));
    m.timing = crate::check::measure::TimingStats::from_samples(&[ms, ms * 1.5, ms]);
    m
}

fn array(name: &str, source: ArraySource) -> TestArg {
    TestArg::Array(ArrayArg {
        name: name.into(),
        dtype: DType::Float32,
        lanes: 1,
        elements: 10,
        source,
        is_output: false,
        expected: None,
    })
}

fn tests(source: ArraySource) -> TestSet {
    TestSet {
        tests: vec![KernelTest {
            id: "t0".into(),
            args: vec![
                array("a", source),
                TestArg::Scalar(ScalarArg {
                    name: "n".into(),
                    dtype: DType::Int32,
                    value: 10.0,
                    bytes: vec![10, 0, 0, 0],
                }),
            ],
            tolerances: Default::default(),
            constants: Vec::new(),
        }],
    }
}

fn generated() -> TestSet {
    tests(ArraySource::Generate {
        dist: Distribution::Randn,
        seed: 1,
    })
}

/// block_size_x ∈ {16, 32, 64}, block_size_y ∈ {1, 2}, restricted to x*y <= 64: 5 configurations.
fn kernel() -> TunableKernel {
    let mut k = TunableKernel::new("__global__ void k() {}", "k", vec!["n".into(), "2".into()]);
    k.params = vec![
        TunableParam::new("block_size_x", [16, 32, 64]),
        TunableParam::new("block_size_y", [1, 2]),
    ];
    k.restrictions = vec![Restriction::Expr(
        "block_size_x*block_size_y <= 64 && n > 1".into(),
    )];
    k
}

fn result(measurements: Vec<Measurement>) -> TuneResult {
    let best = measurements
        .iter()
        .filter(|m| m.verdict.is_ok())
        .min_by(|a, b| a.objective.unwrap().total_cmp(&b.objective.unwrap()))
        .cloned();
    TuneResult {
        kernel_name: "k".into(),
        device: device(),
        strategy: crate::search::Strategy::BruteForce,
        space_size: 5,
        best,
        reference: None,
        measurements,
        phases: Phases::default(),
        peak_gbps: None,
        peak_fp32_gflops: None,
        worker_restarts: 0,
        theoretical_peaks: None,
        efficiency: None,
    }
}

fn full() -> TuneResult {
    let wrong = Measurement::synthetic(
        cfg(32, 2),
        Verdict::WrongAnswer {
            details: vec!["test t0: a differs".into()],
            reports: vec![],
        },
        None,
    );
    result(vec![
        ok(16, 1, 3.0),
        ok(16, 2, 2.0),
        ok(32, 1, 1.5),
        wrong,
        ok(64, 1, 1.0),
    ])
}

/// The script of `k` tuned to `r` on the generated test.
fn script_of(k: &TunableKernel, r: &TuneResult) -> String {
    let t = generated();
    KernelTunerExport::new(k, &t, r)
        .unwrap()
        .script("tune_k.py")
        .unwrap()
}

/// Asserts that the script holds each line, showing the script when not.
fn assert_lines(script: &str, lines: &[&str]) {
    for l in lines {
        assert!(script.contains(l), "no `{l}` in:\n{script}");
    }
}

#[test]
fn cache_file_has_kernel_tuners_key_order_with_cache_last_and_closes_as_it_expects() {
    let (k, t, r) = (kernel(), generated(), full());
    let text = KernelTunerExport::new(&k, &t, &r)
        .unwrap()
        .cache_json()
        .unwrap();
    let keys: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  \""))
        .map(|l| l.trim().split('"').nth(1).unwrap())
        .collect();
    assert_eq!(
        &keys[..6],
        &[
            "device_name",
            "kernel_name",
            "problem_size",
            "tune_params_keys",
            "tune_params",
            "objective"
        ]
    );
    assert_eq!(keys.last(), Some(&"cache"));
    assert!(text.ends_with("}\n}"), "{}", &text[text.len() - 20..]);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    // the script passes two dimensions: so does the cache
    assert_eq!(v["problem_size"], json!([10, 2]));
    assert_eq!(v["cache"]["64,1"]["time"], json!(3.5 / 3.0));
    assert_eq!(v["cache"]["64,1"]["kt_objective_ms"], json!(1.0));
    assert_eq!(v["cache"]["32,2"]["__error__"], "RuntimeFailedConfig");
    assert_eq!(v["kt_best"], json!({"block_size_x": 64, "block_size_y": 1}));
    assert_eq!(v["kt_space_size"], 5);
    assert_eq!(v["kt_measured"], 5);
    assert!(
        v["kt_time_basis"]
            .as_str()
            .unwrap()
            .contains("one launch each, of test `t0`")
    );
}

#[test]
fn script_carries_kts_restrictions_the_thread_limit_and_excludes_failures() {
    let s = script_of(&kernel(), &full());
    assert_lines(
        &s,
        &[
            "\"block_size_x * block_size_y <= 64 and 10 > 1\",",
            "\"block_size_x * block_size_y <= 1024\",",
            "\"(block_size_x, block_size_y) not in {(32, 2)}\",",
            "problem_size = (10, 2)",
            "KT_BEST = {\"block_size_x\": 64, \"block_size_y\": 1}",
            "args.append(rng.standard_normal(10).astype(np.float32))  # a",
            "args.append(np.int32(10))  # n",
        ],
    );
    // a complete search needs no simulation-only restriction
    assert!(!s.contains("if opts.simulate:\n    restrictions"), "{s}");
}

#[test]
fn a_partial_search_is_simulated_over_what_kt_measured() {
    let (k, t) = (kernel(), generated());
    let r = result(vec![ok(16, 1, 3.0), ok(64, 1, 1.0)]);
    assert_lines(
        &script_of(&k, &r),
        &[
            "if opts.simulate:\n    restrictions += [\n",
            "measured 2 of the 5 configurations",
            "\"(block_size_x, block_size_y) in {(16, 1), (64, 1)}\",",
        ],
    );
    let e = KernelTunerExport::new(&k, &t, &r).unwrap();
    let v: serde_json::Value = serde_json::from_str(&e.cache_json().unwrap()).unwrap();
    assert_eq!(v["kt_measured"], 2);
}

#[test]
fn untranslatable_restrictions_become_kts_space() {
    let mut k = kernel();
    k.restrictions = vec![Restriction::closure(|c| c.get("block_size_y") == Some(1))];
    let r = result(vec![ok(16, 1, 3.0), ok(32, 1, 2.0), ok(64, 1, 1.0)]);
    assert_lines(
        &script_of(&k, &r),
        &[
            "a Rust predicate cannot be written in Python",
            "\"(block_size_x, block_size_y) in {(16, 1), (32, 1), (64, 1)}\",",
        ],
    );
}

#[test]
fn export_directory_holds_everything_the_script_reads_by_relative_paths() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("input.npy");
    let mut bytes = kt_record::tests_format::npy::header(DType::Float32, &[10]);
    bytes.extend((0..10).flat_map(|i| (i as f32).to_le_bytes()));
    std::fs::write(&npy, bytes).unwrap();
    let t = tests(ArraySource::Npy {
        path: npy.clone(),
        offset: 0,
    });
    let (k, r) = (kernel(), full());
    let out = dir.path().join("export");
    let written = KernelTunerExport::new(&k, &t, &r)
        .unwrap()
        .write(&out, None)
        .unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["k_cache.json", "tune_k.py", "k_kt.cu", "t0_a.npy"]);
    assert_eq!(
        std::fs::read(out.join("t0_a.npy")).unwrap(),
        std::fs::read(&npy).unwrap()
    );
    let script = std::fs::read_to_string(out.join("tune_k.py")).unwrap();
    assert!(
        script.contains("np.load(os.path.join(HERE, \"t0_a.npy\"))"),
        "{script}"
    );
    assert!(
        !script.contains(&dir.path().display().to_string()),
        "absolute path in {script}"
    );
}

#[test]
fn a_tests_constants_reach_kernel_tuner_as_cmem_args_with_their_file_beside_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("coeffs.npy");
    let mut bytes = kt_record::tests_format::npy::header(DType::Float32, &[16]);
    bytes.extend((0..16).flat_map(|i| (i as f32).to_le_bytes()));
    std::fs::write(&npy, bytes).unwrap();
    let mut t = generated();
    let (k, r) = (kernel(), full());
    let without = KernelTunerExport::new(&k, &t, &r)
        .unwrap()
        .script("tune_k.py")
        .unwrap();
    assert!(!without.contains("cmem_args"), "{without}");
    t.tests[0].constants = vec![crate::model::constants::ConstantArg {
        name: "coeffs".into(),
        dtype: DType::Float32,
        elements: Some(16),
        source: ArraySource::Npy {
            path: npy.clone(),
            offset: 0,
        },
    }];
    let out = dir.path().join("export");
    let written = KernelTunerExport::new(&k, &t, &r)
        .unwrap()
        .write(&out, None)
        .unwrap();
    assert!(
        written.contains(&out.join("t0_cmem_coeffs.npy")),
        "{written:?}"
    );
    assert_eq!(
        std::fs::read(out.join("t0_cmem_coeffs.npy")).unwrap(),
        std::fs::read(&npy).unwrap()
    );
    let script = std::fs::read_to_string(out.join("tune_k.py")).unwrap();
    assert_lines(
        &script,
        &[
            "cmem_args = dict()",
            "cmem_args[\"coeffs\"] = np.load(os.path.join(HERE, \"t0_cmem_coeffs.npy\")).astype(np.float32).ravel()",
        ],
    );
    assert!(
        script.contains(
            "restrictions=restrictions, compiler_options=[], cmem_args=cmem_args, lang=\"cupy\","
        ),
        "{script}"
    );
}

#[test]
fn failed_configurations_name_their_verdicts_once() {
    let r = full();
    let f = failed_configurations(&r);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].config, cfg(32, 2));
    assert_eq!(f[0].verdict, "wrong answer");
    assert_eq!(f[0].detail, "test t0: a differs");
}

#[test]
fn kernel_tuner_cache_reads_back_as_measurements_on_the_same_device_only() {
    let dir = tempfile::tempdir().unwrap();
    let (k, t, r) = (kernel(), generated(), full());
    let written = KernelTunerExport::new(&k, &t, &r)
        .unwrap()
        .write(dir.path(), None)
        .unwrap();
    let c = import::KernelTunerCache::read(&written[0]).unwrap();
    c.check(&k, &t.tests).unwrap();
    assert!(c.measurements_for(&k, "NVIDIA H100").is_none());
    let m = c.measurements_for(&k, "NVIDIA H200").unwrap();
    assert_eq!(m.len(), 5);
    assert_eq!(m[&cfg(64, 1)].objective_ms(), Some(1.0));
    assert!(m[&cfg(64, 1)].from_cache);
    assert_eq!(m[&cfg(32, 2)].verdict.short(), "wrong answer");
}

#[test]
fn an_unclosed_kernel_tuner_cache_is_read_and_a_mismatch_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    // Kernel Tuner's own file while it tunes: header cut after "cache": {, entries with trailing commas
    std::fs::write(
        &path,
        "{\n\"device_name\": \"NVIDIA H200\",\n\"kernel_name\": \"k\",\n\"problem_size\": [10, 2],\n\"tune_params_keys\": [\"block_size_y\", \"block_size_x\"],\n\"tune_params\": {},\n\"objective\": \"time\",\n\"cache\": {\n\"1,16\": {\"block_size_y\": 1, \"block_size_x\": 16, \"time\": 2.0, \"times\": [1.0, 2.0, 3.0], \"compile_time\": 5.0},\n\"2,16\": {\"block_size_y\": 2, \"block_size_x\": 16, \"__error__\": \"CompilationFailedConfig\"},",
    )
    .unwrap();
    let c = import::KernelTunerCache::read(&path).unwrap();
    let (k, t) = (kernel(), generated());
    c.check(&k, &t.tests).unwrap();
    let m = c.measurements_for(&k, "NVIDIA H200").unwrap();
    // kt's objective of a one-test run is the median launch
    assert_eq!(m[&cfg(16, 1)].objective_ms(), Some(2.0));
    assert_eq!(m[&cfg(16, 2)].verdict.short(), "compile error");

    let mut other = kernel();
    other.geometry.problem_size = vec!["n".into()];
    let err = c.check(&other, &t.tests).unwrap_err().to_string();
    assert!(err.contains("problem size"), "{err}");
    other = kernel();
    other.kernel_name = "other".into();
    assert!(
        c.check(&other, &t.tests)
            .unwrap_err()
            .to_string()
            .contains("kernel `k`")
    );
}

#[test]
fn float_bool_and_string_parameters_round_trip_through_kernel_tuners_cache() {
    let dir = tempfile::tempdir().unwrap();
    let mut k = TunableKernel::new("__global__ void k() {}", "k", vec!["n".into()]);
    k.params = vec![
        TunableParam::new("alpha", [0.5, 1.0]),
        TunableParam::new("shared", [true]),
        TunableParam::new("T", ["float", "double"]),
    ];
    let config = |a: f64, t: &str| {
        Config(vec![
            ("alpha".into(), a.into()),
            ("shared".into(), true.into()),
            ("T".into(), t.into()),
        ])
    };
    let mut r = result(
        [
            (0.5, "float", 2.0),
            (0.5, "double", 3.0),
            (1.0, "float", 1.0),
            (1.0, "double", 4.0),
        ]
        .iter()
        .map(|(a, t, ms)| {
            let mut m = Measurement::synthetic(config(*a, t), Verdict::Ok, Some(*ms));
            m.timing = crate::check::measure::TimingStats::from_samples(&[*ms, *ms]);
            m
        })
        .collect(),
    );
    r.space_size = 4;
    let t = generated();
    let export = KernelTunerExport::new(&k, &t, &r).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&export.cache_json().unwrap()).unwrap();
    // Kernel Tuner's keys are str() of each value; the entries hold the values as JSON
    let entry = &doc["cache"]["1.0,True,float"];
    assert_eq!(entry["alpha"], json!(1.0));
    assert_eq!(entry["shared"], json!(true));
    assert_eq!(entry["T"], json!("float"));
    assert_eq!(doc["tune_params"]["T"], json!(["float", "double"]));
    let script = export.script("tune_k.py").unwrap();
    assert_lines(
        &script,
        &[
            "tune_params[\"alpha\"] = [0.5, 1.0]",
            "tune_params[\"shared\"] = [True]",
            "tune_params[\"T\"] = [\"float\", \"double\"]",
        ],
    );
    let written = export.write(dir.path(), None).unwrap();
    let c = import::KernelTunerCache::read(&written[0]).unwrap();
    let m = c.measurements_for(&k, "NVIDIA H200").unwrap();
    assert_eq!(m.len(), 4);
    assert_eq!(m[&config(1.0, "float")].objective_ms(), Some(1.0));
}
