//! What the end-to-end tests of the kt binary share: running kt isolated from the user's configuration,
//! reading what it printed and wrote, and deciding which machine-dependent tests to skip.
//!
//! Each file in `tests/` is its own crate and uses only part of this module (`mod support;`), hence the
//! `dead_code` allowance.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod other_user;

/// The workspace root: kt runs from here so that `prompts/`, `naive-kernels/` and `experiments/` are found
/// (`KT_TEST_ROOT`: a copy another user can read, see `other_user.rs`).
pub fn root() -> PathBuf {
    std::env::var_os("KT_TEST_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The kt binary (`KT_TEST_BIN`: a copy another user can run). With `KT_EXPECT_UID` set (tests run again as
/// another user), a test that would run kt as anyone else fails here.
fn kt_binary() -> PathBuf {
    if let Some(uid) = std::env::var_os("KT_EXPECT_UID") {
        let me = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m));
        assert_eq!(
            me.ok().map(|u| u.to_string()),
            Some(uid.to_string_lossy().into_owned()),
            "these tests were to run as uid {uid:?}"
        );
    }
    std::env::var_os("KT_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kt")))
}

/// A `kt` command run from the workspace root with `home` as its home, and none of the user's configuration
/// (environment variables or config files) leaking in, so a developer's own LLM settings cannot change a test.
pub fn kt_command(home: &Path) -> Command {
    let mut cmd = Command::new(kt_binary());
    cmd.current_dir(root())
        .env_remove("KT_CONFIG")
        .env_remove("KT_LLM")
        .env_remove("KT_LLM_BASE_URL")
        .env_remove("KT_RUNS_DIR")
        .env_remove("KT_PROMPTS_DIR")
        .env_remove("KT_SEED")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("no-config"));
    cmd
}

/// Runs a command to completion and returns what it printed.
pub fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("kt runs")
}

/// Runs `kt args` as [`kt_command`] sets it up.
pub fn kt(home: &Path, args: &[&str]) -> Output {
    output(kt_command(home).args(args))
}

/// Printed bytes as text, for assertions and their messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parses a JSON file kt wrote.
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The one entry of `dir` (the run directory of a command that was run once with `--out dir`).
pub fn only_entry(dir: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

/// Whether GPU tests run for real: only when `KT_GPU=1`.
pub fn gpu_enabled() -> bool {
    std::env::var("KT_GPU").is_ok_and(|v| v == "1")
}

/// For tests about a machine without a GPU: with `KT_GPU=1` they would check nothing, so they fail loudly
/// instead of passing silently. experiments/gpu-check.sh skips them by name.
#[allow(dead_code)]
pub fn require_no_gpu() {
    assert!(
        !gpu_enabled(),
        "this test is about a machine without a GPU: with KT_GPU=1 skip it by name (experiments/gpu-check.sh does)"
    );
}

/// The scripted answers of a `kt transform` of the suite's matmul (autonomous strategy).
pub const MATMUL_SCRIPT: &str = "experiments/cassettes/matmul-autonomous.toml";

/// A `kt transform` of the suite's matmul with scripted answers, stopped for want of a GPU; its run directory.
pub fn stopped_matmul_run(home: &Path, out_dir: &Path) -> PathBuf {
    let out = kt(
        home,
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            "autonomous",
            "--tests",
            "1",
            "--llm",
            &format!("scripted:{MATMUL_SCRIPT}"),
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    only_entry(out_dir)
}

/// What a person would answer to each question of `kt transform naive-kernels/vectorAdd.cu`'s Stages 1-2.
pub fn vector_add_answer(node: &str) -> &'static str {
    match node {
        "stage1.describe" => {
            r#"{"description": "Adds two float vectors element-wise: c[i] = a[i] + b[i] for i < n."}"#
        }
        "stage1.dimensions" => r#"{"dimensions": 1}"#,
        "stage1.problem_size" => r#"{"dimensions": ["n"]}"#,
        "stage1.outputs" => r#"{"outputs": ["c"], "inputs_and_outputs": []}"#,
        "stage2.generator" | "stage2.tail" | "stage2.resize" => {
            "```python\nimport numpy as np\n\n\ndef generate(seed: int) -> list:\n    rng = np.random.default_rng(seed)\n    \
             n = 1000003 + 2 * (seed % 5)\n    a = rng.standard_normal(n).astype(np.float32)\n    \
             b = rng.standard_normal(n).astype(np.float32)\n    c = np.zeros(n, dtype=np.float32)\n    \
             return [a, b, c, np.int32(n)]\n```\n"
        }
        other => panic!("no answer written for {other}"),
    }
}

/// `kt transform naive-kernels/vectorAdd.cu --tests 1` with a `manual:` LLM whose prompts go to `home/prompts`,
/// its runs under `home/runs`: it stops at the first prompt. Returns what it printed and the `--llm` spec.
pub fn start_manual_vector_add(home: &Path) -> (Output, String) {
    let manual = format!("manual:{}", home.join("prompts").display());
    let runs = home.join("runs");
    let out = kt(
        home,
        &[
            "transform",
            "naive-kernels/vectorAdd.cu",
            "--tests",
            "1",
            "--llm",
            &manual,
            "--out",
            runs.to_str().unwrap_or_default(),
        ],
    );
    (out, manual)
}
