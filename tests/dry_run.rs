//! End-to-end tests of `--dry-run` (`kt tune`, `kt verify`, `kt transform`, `kt experiment run`) and of tuning
//! arguments checked before any GPU work: a dry run checks what it can on a login node (no GPU, no LLM call),
//! says what would run and exits 0, or 2 on bad input; nothing is written.

#![allow(clippy::unwrap_used)]

use std::process::Output;

mod support;
use support::{kt, text};

fn run(args: &[&str]) -> (Output, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    (kt(home.path(), args), home)
}

#[test]
fn a_tune_dry_run_counts_the_space_after_its_restrictions() {
    let (out, _home) = run(&[
        "tune",
        "naive-kernels/matmul.cu",
        "--param",
        "block_size_x=8,16,32",
        "--param",
        "block_size_y=8,16,32",
        "--restrict",
        "block_size_x*block_size_y <= 256",
        "--dry-run",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // 9 combinations; 16x32, 32x16 and 32x32 exceed 256 threads
    assert!(
        stdout.contains("space: 9 configurations, 6 after restrictions"),
        "{stdout}"
    );
    assert!(stdout.contains("`matrixMultiply`"), "{stdout}");
    assert!(stdout.contains("dry run"), "{stdout}");
}

#[test]
fn a_bad_restriction_is_refused_without_a_gpu_with_or_without_dry_run() {
    let args = [
        "tune",
        "naive-kernels/matmul.cu",
        "--restrict",
        "nosuch > 4",
    ];
    let (out, _home) = run(&args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("nosuch > 4"), "{err}");
    assert!(
        !err.contains("on a GPU and could not start one"),
        "reached the GPU: {err}"
    );
    let (out, _home) = run(&[&args[..], &["--dry-run"]].concat());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nosuch > 4"), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "said once: {err}");
}

#[test]
fn a_parameter_without_a_name_is_refused_before_any_gpu_work() {
    let (out, _home) = run(&["tune", "naive-kernels/matmul.cu", "--param", "=32"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--param =32") && err.contains("no name"),
        "{err}"
    );
    assert!(
        !err.contains("on a GPU and could not start one"),
        "reached the GPU: {err}"
    );
}

#[test]
fn a_verify_dry_run_names_both_kernels_and_the_tests_it_can_make_without_a_gpu() {
    let (out, _home) = run(&[
        "verify",
        "naive-kernels/vectorAdd.cu",
        "naive-kernels/vectorAdd.cu",
        "--dry-run",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("reference: `vectorAdd`"), "{stdout}");
    assert!(stdout.contains("gen1, gen2, gen3; odd"), "{stdout}");
    assert!(stdout.contains("sized once the GPU is known"), "{stdout}");
}

/// The red team's saxpy that rounds `a` to bfloat16 and histogram with 16-bit block counters pass every test
/// at the sidecar's scalars and uniform data: their verification plans a test at another `a` and one of
/// all-zero bytes (the fake device runs no kernel: that they fail there is for the GPU corpus to show).
#[test]
fn a_verify_dry_run_plans_varied_scalars_and_skewed_data_against_the_attacks_that_need_them() {
    let (out, _home) = run(&[
        "verify",
        "naive-kernels/saxpy.cu",
        "tests/corpus/verify/attacks/saxpy_scalar_bf16.cu",
        "--dry-run",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("varied-scalars: a 1.5 -> 1.1606601 (values the sidecar never gives)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("large, bench, past-2^24 and past-2GiB: sized once the GPU is known"),
        "{stdout}"
    );
    let (out, _home) = run(&[
        "verify",
        "naive-kernels/histogram.cu",
        "tests/corpus/verify/attacks/histogram_packed_u16_bins.cu",
        "--dry-run",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("skewed: data all 0 (instead of randint:0:256)"),
        "{stdout}"
    );
    assert!(!stdout.contains("varied-scalars"), "n is a size: {stdout}");
}

#[test]
fn a_transform_dry_run_checks_the_llm_configuration_and_writes_no_run() {
    let (out, home) = run(&[
        "transform",
        "naive-kernels/matmul.cu",
        "--llm",
        "replay:experiments/cassettes/matmul-autonomous.jsonl",
        "--out",
        "RUNS_PLACEHOLDER",
        "--dry-run",
    ]);
    drop(home);
    // the placeholder is relative to the workspace root: a dry run must not create it
    assert!(!support::root().join("RUNS_PLACEHOLDER").exists());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("strategy: autonomous"), "{stdout}");
    assert!(stdout.contains("not contacted"), "{stdout}");
    // no LLM configured: bad input, said before anything runs
    let (out, _home) = run(&["transform", "naive-kernels/matmul.cu", "--dry-run"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("none is configured"), "{err}");
}

#[test]
fn an_experiment_dry_run_expands_the_design_and_runs_no_cell() {
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("exp");
    let out = kt(
        home.path(),
        &[
            "experiment",
            "run",
            "experiments/smoke.toml",
            "--out",
            out_dir.to_str().unwrap(),
            "--dry-run",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("smoke: 7 cells"), "{stdout}");
    assert!(!out_dir.exists(), "a dry run wrote {}", out_dir.display());
}

#[test]
fn one_flag_means_one_thing_and_the_old_spellings_still_work() {
    for search in ["--search", "--strategy"] {
        let (out, _home) = run(&[
            "tune",
            "naive-kernels/vectorAdd.cu",
            search,
            "random",
            "--bench-size",
            "--dry-run",
        ]);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{search}: {}",
            text(&out.stderr)
        );
        assert!(stdout.contains("strategy: random"), "{stdout}");
    }
    // a tests directory is --tests-dir
    let (out, _home) = run(&[
        "tune",
        "naive-kernels/vectorAdd.cu",
        "--tests-dir",
        "/nonexistent-tests",
        "--dry-run",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent-tests"), "{err}");
    let (out, _home) = run(&[
        "verify",
        "naive-kernels/vectorAdd.cu",
        "naive-kernels/vectorAdd.cu",
        "--test-size",
        "--bench-size",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    for runs in ["--runs-dir", "--out"] {
        let (out, home) = run(&[
            "transform",
            "naive-kernels/matmul.cu",
            "--llm",
            "replay:experiments/cassettes/matmul-autonomous.jsonl",
            "--tests-count",
            "2",
            runs,
            "/tmp/kt-runs-of-a-dry-run",
            "--dry-run",
        ]);
        drop(home);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{runs}: {}", text(&out.stderr));
        assert!(
            stdout.contains("under /tmp/kt-runs-of-a-dry-run"),
            "{stdout}"
        );
        assert!(stdout.contains("tests: 2 generated"), "{stdout}");
    }
}

#[test]
fn a_tune_dry_run_takes_float_and_string_parameters_as_kernel_tuner_does() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scale.cu");
    std::fs::write(
        &file,
        "__global__ void scale(float *out, const float *in, int n) {\n  int i = blockIdx.x * block_size_x + threadIdx.x;\n  if (i < n) out[i] = (float)((VALUE_T)in[i] * (VALUE_T)factor);\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("scale.toml"),
        "kernel = \"scale\"\ndescription = \"out = in * factor\"\nproblem_size = [\"n\"]\noutputs = [\"out\"]\ndefault_block = [256, 1, 1]\nbench = { n = 1000 }\ninputs = { out = \"zeros\", in = \"randn\" }\nsizes = { out = \"n\", in = \"n\" }\nflops = \"n\"\nbytes = \"8 * n\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let tune = |extra: &[&str]| {
        let base = [
            "tune",
            f,
            "--param",
            "block_size_x=128,256",
            "--param",
            "factor=0.5,2.0",
            "--param",
            "VALUE_T='float','double'",
            "--dry-run",
        ];
        run(&[&base[..], extra].concat())
    };
    let (out, _home) = tune(&["--restrict", "factor > 1 or VALUE_T == 'float'"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("parameters: block_size_x=128,256 factor=0.5,2.0 VALUE_T=float,double"),
        "{stdout}"
    );
    // 8 combinations; factor 0.5 with double is left out
    assert!(
        stdout.contains("space: 8 configurations, 6 after restrictions"),
        "{stdout}"
    );
    // a block size is a number of threads: a float is refused by name
    let (out, _home) = tune(&["--param", "block_size_y=1.5"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`block_size_y` sets the block size") && err.contains("`1.5` is a float"),
        "{err}"
    );
}

#[test]
fn a_tune_dry_run_refuses_what_the_real_run_would_an_empty_space_a_repeated_or_unused_parameter() {
    let refused = |extra: &[&str], says: &str| {
        let args = [
            &["tune", "naive-kernels/matmul.cu"][..],
            extra,
            &["--dry-run"],
        ]
        .concat();
        let (out, _home) = run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        // the real run refuses it the same way, before any GPU work
        let (out, _home) = run(&args[..args.len() - 1]);
        let err = text(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{extra:?}: {err}"
        );
        assert!(
            !err.contains("on a GPU and could not start one"),
            "reached the GPU: {err}"
        );
    };
    refused(
        &[
            "--param",
            "block_size_x=8,16",
            "--restrict",
            "block_size_x > 64",
        ],
        "no configuration is left",
    );
    refused(
        &["--param", "block_size_x=8", "--param", "block_size_x=16"],
        "--param block_size_x is given twice",
    );
    refused(&["--param", "blok_size_x=8,16"], "never uses `blok_size_x`");
    refused(
        &[
            "--param",
            "block_size_x=8,16",
            "--restrict",
            "block_size_x = 16",
        ],
        "compare with `==` (e.g. --restrict \"block_size_x == 16\")",
    );
}

#[test]
fn a_tune_dry_run_with_json_prints_json() {
    let (out, _home) = run(&[
        "tune",
        "naive-kernels/matmul.cu",
        "--param",
        "block_size_x=8,16,32",
        "--param",
        "block_size_y=8,16,32",
        "--restrict",
        "block_size_x*block_size_y <= 256",
        "--dry-run",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)));
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["kernel"], "matrixMultiply");
    assert_eq!(v["configurations"], 9);
    assert_eq!(v["after_restrictions"], 6);
    assert_eq!(
        v["parameters"]["block_size_x"],
        serde_json::json!([8, 16, 32])
    );
}

#[test]
fn a_transform_dry_run_refuses_a_sidecar_that_does_not_fit_the_kernel_as_tune_does() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("k");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy("naive-kernels/saxpy.cu", dir.join("saxpy.cu")).unwrap();
    let sidecar = std::fs::read_to_string("naive-kernels/saxpy.toml").unwrap();
    let file = dir.join("saxpy.cu");
    let file = file.to_str().unwrap();
    for (what, bad) in [
        (
            "an output not in the signature",
            sidecar.replace("outputs = [\"y\"]", "outputs = [\"z\"]"),
        ),
        (
            "an unknown dtype",
            sidecar.replace("y = \"float32\" }", "y = \"float33\" }"),
        ),
    ] {
        std::fs::write(dir.join("saxpy.toml"), &bad).unwrap();
        let tune = kt(home.path(), &["tune", file, "--dry-run"]);
        assert_eq!(
            tune.status.code(),
            Some(2),
            "{what}: kt tune takes it: {}",
            text(&tune.stdout)
        );
        let transform = kt(
            home.path(),
            &[
                "transform",
                file,
                "--llm",
                "replay:experiments/cassettes/matmul-autonomous.jsonl",
                "--dry-run",
            ],
        );
        let err = text(&transform.stderr);
        assert_eq!(
            transform.status.code(),
            Some(2),
            "{what}: {err}{}",
            text(&transform.stdout)
        );
        assert!(err.contains("sidecar"), "{what}: {err}");
    }
}

/// Issue 49: `--tests N` is how many tests on every command (the README's promise); a directory given to it
/// is refused with the flag that reads one.
#[test]
fn tests_n_is_a_count_on_tune_verify_transform_and_testgen_and_a_directory_names_tests_dir() {
    let (out, _home) = run(&[
        "tune",
        "naive-kernels/vectorAdd.cu",
        "--tests",
        "2",
        "--dry-run",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("tests: 2 "), "{stdout}");
    let (out, _home) = run(&[
        "verify",
        "naive-kernels/vectorAdd.cu",
        "naive-kernels/vectorAdd.cu",
        "--tests",
        "2",
        "--dry-run",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("gen1, gen2; odd"), "{stdout}");
    for command in [
        &["tune", "naive-kernels/vectorAdd.cu", "--dry-run"][..],
        &[
            "verify",
            "naive-kernels/vectorAdd.cu",
            "naive-kernels/vectorAdd.cu",
            "--dry-run",
        ],
        &["transform", "naive-kernels/vectorAdd.cu", "--dry-run"],
        // kt testgen has no dry run: the value is refused before anything runs
        &["testgen", "naive-kernels/vectorAdd.cu"],
    ] {
        let (out, _home) = run(&[command, &["--tests", "kt-runs/R/tests"]].concat());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {err}");
        assert!(
            err.contains("how many tests") && err.contains("--tests-dir kt-runs/R/tests"),
            "{command:?}: {err}"
        );
    }
}

/// Issue 49: an experiment's dry run checks that the API key variables its models read are set (a sweep of
/// cells that all fail at their first LLM call is refused before it starts), and never prints a key.
#[test]
fn an_experiment_dry_run_names_an_unset_api_key_variable_and_never_prints_a_key() {
    const KEYS: [&str; 4] = [
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "DEEPSEEK_API_KEY",
        "TOGETHER_API_KEY",
    ];
    let home = tempfile::tempdir().unwrap();
    let dry_run = |set: &[&str]| {
        let mut cmd = support::kt_command(home.path());
        cmd.args(["experiment", "run", "experiments/thesis.toml", "--dry-run"]);
        for key in KEYS {
            cmd.env_remove(key);
        }
        for key in set {
            cmd.env(key, "sk-kt-test-secret-49");
        }
        support::output(&mut cmd)
    };
    let out = dry_run(&KEYS[1..]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("OPENAI_API_KEY") && err.contains("export"),
        "{err}"
    );
    let out = dry_run(&KEYS[..3]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("$TOGETHER_API_KEY"), "{err}");
    let out = dry_run(&KEYS);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(stdout.contains("API key variables checked"), "{stdout}");
    assert!(
        !stdout.contains("sk-kt-test-secret-49") && !err.contains("sk-kt-test-secret-49"),
        "{stdout}{err}"
    );
}
