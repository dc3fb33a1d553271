//! A kernel that reads `__constant__` symbols: the generator returns their contents beside the arguments,
//! the harness checks them against the declarations, and they are stored (and hashed) with the test; a
//! symbol left out is an error naming it.

use std::path::Path;

use super::tests::{python, small_policy};
use super::*;

/// fir(float *out, const float *in, int n) reading `__constant__ float coeffs[16]`.
fn spec() -> GeneratorSpec {
    GeneratorSpec {
        kernel: "fir".into(),
        params: vec![
            ArgSpec::array("out", "float", Some("n")),
            ArgSpec::array("in", "float", Some("n + 15")),
            ArgSpec::scalar("n", "int"),
        ],
        constants: vec![ConstantSpec::new("coeffs", "float", Some(16))],
        outputs: vec!["out".into()],
        problem_size: Some(vec!["n".into()]),
        max_total_bytes: 16 << 20,
    }
}

/// A generator whose `coeffs` is the Python expression `coeffs` (over `rng`).
fn generator(answer: &str) -> String {
    format!(
        "import numpy as np\n\ndef generate(seed: int):\n    rng = np.random.default_rng(seed)\n    n = 1001\n    \
         out = np.zeros(n, dtype=np.float32)\n    inp = rng.standard_normal(n + 15).astype(np.float32)\n    \
         coeffs = rng.standard_normal(16).astype(np.float32)\n    return {answer}\n"
    )
}

fn run(script: &str, dest: &Path) -> Result<GeneratedTest, GeneratorError> {
    let sandbox = Sandbox::new(small_policy());
    run_generator(&sandbox, &python(), script, &spec(), 1, dest)
}

#[test]
fn constants_returned_beside_the_arguments_are_stored_with_the_test() {
    let dest = tempfile::tempdir().unwrap();
    let script = generator(r#"{"args": [out, inp, n], "constants": {"coeffs": coeffs}}"#);
    let test = run(&script, dest.path()).unwrap();
    assert_eq!(
        test.manifest.constants,
        [ManifestConstant {
            name: "coeffs".into(),
            dtype: "float32".into(),
            shape: Some(vec![16]),
            file: "constants/coeffs.npy".into(),
            struct_name: None,
        }]
    );
    assert!(test.dir.join("constants/coeffs.npy").is_file());
    let on_disk: TestManifest =
        serde_json::from_slice(&std::fs::read(test.dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(on_disk.constants, test.manifest.constants);

    // the constants are part of the test's identity: other coefficients, another test
    let other = generator(r#"{"args": [out, inp, n], "constants": {"coeffs": coeffs * 2}}"#);
    let second = run(&other, dest.path()).unwrap();
    assert_ne!(second.id, test.id);
}

#[test]
fn a_constant_the_generator_leaves_out_is_named() {
    let dest = tempfile::tempdir().unwrap();
    for answer in ["[out, inp, n]", r#"{"args": [out, inp, n]}"#] {
        match run(&generator(answer), dest.path()) {
            Err(GeneratorError::MissingConstants { names }) => assert_eq!(names, ["coeffs"]),
            other => panic!("expected the missing constant for {answer}, got {other:?}"),
        }
    }
    assert_eq!(std::fs::read_dir(dest.path()).unwrap().count(), 0);
}

#[test]
fn a_constant_of_the_wrong_type_length_or_name_is_refused() {
    let dest = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"args": [out, inp, n], "constants": {"coeffs": coeffs.astype(np.float64)}}"#,
            "has dtype float64 but the symbol is float32",
        ),
        (
            r#"{"args": [out, inp, n], "constants": {"coeffs": coeffs[:8]}}"#,
            "must have the 16 elements its declaration gives, got 8",
        ),
        (
            r#"{"args": [out, inp, n], "constants": {"coeffs": coeffs, "taps": coeffs}}"#,
            "`taps`, which is not a `__constant__` symbol the kernel reads (it reads: coeffs)",
        ),
        (
            r#"{"args": [out, inp, n], "constants": {"coeffs": 1.0}}"#,
            "must be a numpy array of float32",
        ),
        (
            r#"{"arguments": [out, inp, n]}"#,
            "a dict with keys ['arguments']",
        ),
    ];
    for (answer, message) in cases {
        let err = run(&generator(answer), dest.path()).unwrap_err();
        assert!(err.is_generator_fault(), "{err}");
        assert!(err.to_string().contains(message), "{answer}: {err}");
    }
}
