//! End-to-end tests of `kt inspect` through the real binary.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

mod support;
use support::{root, text};

/// Runs kt with a fresh home, isolated from the user's configuration.
fn kt(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    support::kt(home.path(), args)
}

fn write_temp(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The JSON of one suite kernel is compared with a checked-in golden file. After an intended change to the
/// schema or to naive-kernels/matmul.cu, regenerate it with `KT_BLESS=1 cargo test --test inspect`.
#[test]
fn inspect_json_of_matmul_matches_the_golden_file() {
    let out = kt(&["inspect", "naive-kernels/matmul.cu", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let actual: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let golden_path = root().join("tests/golden/inspect-matmul.json");
    if std::env::var_os("KT_BLESS").is_some() {
        std::fs::write(
            &golden_path,
            serde_json::to_string_pretty(&actual).unwrap() + "\n",
        )
        .unwrap();
    }
    let golden: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&golden_path).unwrap())
            .expect("golden file is JSON");
    assert_eq!(
        actual, golden,
        "kt inspect --json changed; if intended, rerun with KT_BLESS=1"
    );
    assert_eq!(actual["schema_version"], 1);
    let names: Vec<&str> = actual["kernels"][0]["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["A", "B", "C", "A_width", "A_height", "B_width"]);
}

#[test]
fn inspect_prints_a_readable_summary() {
    let out = kt(&["inspect", "naive-kernels/matmul.cu"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(summary.contains("kernel matrixMultiply"), "{summary}");
    assert!(summary.contains("A_width"), "{summary}");
    assert!(summary.contains("uses: blockDim"), "{summary}");
}

#[test]
fn several_kernels_are_all_shown_and_kernel_picks_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_temp(
        dir.path(),
        "two.cu",
        b"__global__ void a(int n) {}\n__global__ void b(float *x) {}\n",
    );
    let file = file.to_str().unwrap();
    let all = kt(&["inspect", file, "--json"]);
    assert!(all.status.success(), "{}", text(&all.stderr));
    let json: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(json["kernels"].as_array().unwrap().len(), 2);

    let one = kt(&["inspect", file, "--kernel", "b", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!(json["kernels"].as_array().unwrap().len(), 1);
    assert_eq!(json["kernels"][0]["name"], "b");

    let wrong = kt(&["inspect", file, "--kernel", "c"]);
    assert!(!wrong.status.success());
    assert!(
        text(&wrong.stderr).contains("available: a, b"),
        "{}",
        text(&wrong.stderr)
    );
}

#[test]
fn bad_input_fails_with_a_message_a_user_can_act_on() {
    let dir = tempfile::tempdir().unwrap();
    let no_kernel = write_temp(dir.path(), "host.cu", b"int main() { return 0; }\n");
    let out = kt(&["inspect", no_kernel.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no __global__ function found in"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("kt needs a CUDA kernel"),
        "{}",
        text(&out.stderr)
    );

    let python = write_temp(
        dir.path(),
        "gen.py",
        b"import numpy as np\ndef main():\n    return np.zeros(3)\n",
    );
    let out = kt(&["inspect", python.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("does not look like CUDA"),
        "{}",
        text(&out.stderr)
    );

    let binary = write_temp(
        dir.path(),
        "a.out",
        &[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0],
    );
    let out = kt(&["inspect", binary.to_str().unwrap()]);
    assert!(
        text(&out.stderr).contains("does not look like CUDA"),
        "{}",
        text(&out.stderr)
    );

    let broken = write_temp(
        dir.path(),
        "broken.cu",
        b"__global__ void k(float *a) {\n  a[0] = ;\n}\n",
    );
    let out = kt(&["inspect", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("line 2, column"),
        "{}",
        text(&out.stderr)
    );

    let out = kt(&["inspect", "does/not/exist.cu"]);
    assert!(
        text(&out.stderr).contains("cannot read does/not/exist.cu"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn unit_prints_the_device_only_source_of_a_whole_program() {
    let out = kt(&[
        "inspect",
        "tests/corpus/wild/vector_add_program.cu",
        "--unit",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let unit = text(&out.stdout);
    assert!(unit.contains("__device__ float add_op"), "{unit}");
    assert!(unit.contains("__global__ void vectorAdd"), "{unit}");
    for host in ["main", "cudaMalloc", "<<<", "CUDA_CHECK", "stdio.h"] {
        assert!(!unit.contains(host), "{host} in {unit}");
    }
    let json = kt(&[
        "inspect",
        "tests/corpus/wild/vector_add_program.cu",
        "--unit",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["items"][1]["kind"], "kernel");
    assert!(
        json["dropped_host_items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"] == "main")
    );
}

#[test]
fn a_kernel_in_an_included_header_is_found_and_a_missing_header_is_named() {
    let out = kt(&["inspect", "tests/corpus/wild/stencil_main.cu", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["kernels"][0]["name"], "stencil_1d");
    assert!(
        json["kernels"][0]["origin_file"]
            .as_str()
            .unwrap()
            .ends_with("stencil.cuh")
    );
    assert_eq!(json["units"][0]["kernel"], "stencil_1d");

    let dir = tempfile::tempdir().unwrap();
    let inc = dir.path().join("inc");
    std::fs::create_dir_all(&inc).unwrap();
    write_temp(
        &inc,
        "kern.cuh",
        b"__global__ void k(float *a) { a[0] = 1; }\n",
    );
    let main = write_temp(
        dir.path(),
        "main.cu",
        b"#include \"kern.cuh\"\nint main() { return 0; }\n",
    );
    let main = main.to_str().unwrap();
    let out = kt(&["inspect", main]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("no __global__ function found"), "{err}");
    assert!(
        err.contains("includes not found: \"kern.cuh\" (add their directory with --include DIR)"),
        "{err}"
    );
    let out = kt(&[
        "inspect",
        main,
        "--include",
        inc.to_str().unwrap(),
        "--unit",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "__global__ void k(float *a) { a[0] = 1; }\n"
    );
}

#[test]
fn an_aligned_struct_hides_no_kernel() {
    let out = kt(&["inspect", "tests/corpus/wild/aligned_pairs.cu"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(summary.contains("2 kernels"), "{summary}");
}

/// A kernel that keeps a launch counter in a `__device__` global: `kt inspect` names it, in JSON and in words.
#[test]
fn inspect_lists_the_mutable_globals_a_kernel_writes() {
    let file = "tests/corpus/verify/attacks/state_across_launches.cu";
    let out = kt(&["inspect", file, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let globals = &json["kernels"][0]["mutable_globals"];
    assert_eq!(globals[0]["name"], "launches", "{globals}");
    assert_eq!(globals[0]["space"], "__device__");
    assert_eq!(globals.as_array().unwrap().len(), 1);
    let summary = text(&kt(&["inspect", file]).stdout);
    assert!(
        summary.contains("mutable globals written: __device__ launches"),
        "{summary}"
    );
}

/// The reward-hack corpus (issues 29 and 48): at least forty cases, each file a kernel kt parses under the
/// reference's name (with the state it keeps across launches found, where it keeps any), each case with a
/// verdict kt can give and the reason a careful harness gives it.
#[test]
fn every_attack_of_the_corpus_parses_and_names_a_known_verdict() {
    let dir = root().join("tests/corpus/verify/attacks");
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(dir.join("attacks.toml")).unwrap()).unwrap();
    let cases = manifest["case"].as_array().unwrap();
    let known = [
        "correct",
        "delivered",
        "wrong_results",
        "never_written",
        "input_modified",
        "nondeterministic",
        "out_of_bounds",
        "timed_run_differs",
        "impossible_time",
        "launch_error",
        "reference_does_no_work",
        "carries_state",
        "wrong_answer",
        "reference_timed_run_differs",
        "not_faster",
    ];
    // kt's checks for state across launches and inputs start from the parser finding the state
    let keeps_state = [
        "state_across_launches.cu",
        "lazy_after_40_launches.cu",
        "wrong_after_checked_calls.cu",
        "cross_input_cache.cu",
        "batch_across_timed_calls.cu",
        "memoise_by_pointer.cu",
        "rotating_sum_order.cu",
        "lazy_after_40_hidden.cu",
        "lazy_unchecked_samples.cu",
        "memoise_matmul_hidden.cu",
    ];
    let mut attacks = std::collections::BTreeSet::new();
    for c in cases {
        let file = c["file"].as_str().unwrap();
        let path = dir.join(file);
        assert!(path.is_file(), "{file}");
        for e in c["expect"].as_array().unwrap() {
            assert!(known.contains(&e.as_str().unwrap()), "{file}: {e}");
        }
        assert!(c["why"].as_str().unwrap().len() > 20, "{file}: say why");
        let out = kt(&["inspect", path.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{file}: {}", text(&out.stderr));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let globals = json["kernels"][0]["mutable_globals"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(
            globals > 0,
            keeps_state.contains(&file),
            "{file}: mutable globals {}",
            json["kernels"][0]["mutable_globals"]
        );
        if let Some(reference) = c.get("reference").and_then(|r| r.as_str()) {
            let want = text(&kt(&["inspect", reference, "--json"]).stdout);
            let want: serde_json::Value = serde_json::from_str(&want).unwrap();
            assert_eq!(
                json["kernels"][0]["name"], want["kernels"][0]["name"],
                "{file} must be a candidate for {reference}"
            );
        }
        if !file.starts_with("..") {
            attacks.insert(file.to_string());
        }
    }
    assert!(attacks.len() >= 35, "{} attacks", attacks.len());
    assert!(cases.len() >= 40, "{} cases", cases.len());
}
