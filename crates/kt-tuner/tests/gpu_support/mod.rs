//! What the GPU test executables share: the worker (the test executable itself, re-executed with only its
//! `gpu_worker_entry` test selected), a tuner that uses it, and tests of an `(in, out, n)` kernel.

#![allow(dead_code)]

use std::collections::BTreeMap;

use kt_record::DType;
use kt_tuner::model::args::{ParamSpec, SizeChoice, SuiteInputs, TestSet};
use kt_tuner::model::space::Config;
use kt_tuner::session::{Tuner, TunerConfig};
use kt_tuner::worker::process::{PROTOCOL_ENV, WorkerCommand};

/// The body of every GPU test file's `gpu_worker_entry` test: serve as the worker when started as one.
pub fn serve_if_worker() {
    if std::env::var(PROTOCOL_ENV).is_ok() {
        std::process::exit(i32::from(kt_tuner::worker::serve().is_err()));
    }
}

/// A tuner configuration whose worker is this test executable.
pub fn config() -> TunerConfig {
    TunerConfig {
        worker: Some(WorkerCommand {
            program: std::env::current_exe().unwrap(),
            args: vec![
                "--exact".into(),
                "gpu_worker_entry".into(),
                "--nocapture".into(),
                "--test-threads=1".into(),
            ],
            env: vec![],
            under_profiler: false,
        }),
        ..TunerConfig::default()
    }
}

pub fn tuner() -> Tuner {
    Tuner::new(config()).unwrap()
}

pub fn config_of(values: &[(&str, i64)]) -> Config {
    Config::ints(values.iter().copied())
}

pub fn block(x: i64) -> Config {
    config_of(&[("block_size_x", x)])
}

/// Two seeded tests of a kernel `(in, out, n)` over `dtype` arrays (a numpy name) of `n` elements; `out`
/// holds `out_size` elements, sized over `configs`.
pub fn in_out_n_tests(
    dtype: &str,
    n: f64,
    out_size: &str,
    configs: &[Config],
) -> (TestSet, SuiteInputs) {
    let (d, _) = DType::parse_numpy(dtype).unwrap();
    let p = |name: &str| ParamSpec {
        name: name.into(),
        is_pointer: true,
        dtype: Some((d, 1)),
    };
    let params = vec![
        p("in"),
        p("out"),
        ParamSpec {
            name: "n".into(),
            is_pointer: false,
            dtype: Some((DType::Int32, 1)),
        },
    ];
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    let inputs = SuiteInputs {
        outputs: vec!["out".into()],
        test: BTreeMap::from([("n".to_string(), n)]),
        inputs: BTreeMap::from([pair("in", "randn"), pair("out", "zeros")]),
        dtypes: BTreeMap::from([pair("in", dtype), pair("out", dtype)]),
        sizes: BTreeMap::from([pair("in", "n"), pair("out", out_size)]),
        ..SuiteInputs::default()
    };
    let set = inputs
        .make_tests_for(&params, SizeChoice::Test, &BTreeMap::new(), 2, configs)
        .unwrap();
    (set, inputs)
}
