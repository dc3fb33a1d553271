//! End-to-end tests of handing a run to another machine: a run records how to reach its LLM (never a key),
//! `kt resume` continues with it without `--llm`, takes a unique prefix of a run id, lists the runs an
//! ambiguous one matches, and says what to run for a `kt testgen` run. No GPU, no LLM service.

#![allow(clippy::unwrap_used)]

use std::path::Path;

mod support;
use support::{kt, kt_command, only_entry, output, read_json, require_no_gpu, text};

use support::{MATMUL_SCRIPT as SCRIPT, stopped_matmul_run as stopped_run};

#[test]
fn a_run_stopped_without_a_gpu_resumes_by_id_prefix_with_its_recorded_llm() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let run = stopped_run(home.path(), &out_dir);
    let meta = read_json(&run.join("run.json"));
    let spec = meta["llm"]["spec"].as_str().unwrap();
    let path = spec.strip_prefix("scripted:").unwrap();
    assert!(
        Path::new(path).is_absolute() && path.ends_with(SCRIPT),
        "{meta}"
    );

    let id = run.file_name().unwrap().to_str().unwrap().to_string();
    let prefix = &id[..15];
    let resumed = kt(
        home.path(),
        &["resume", prefix, "--runs-dir", out_dir.to_str().unwrap()],
    );
    let stderr = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("(recorded by the run)") && stderr.contains(SCRIPT),
        "{stderr}"
    );
    assert!(!stderr.contains("needs an LLM"), "{stderr}");
    assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");

    // Naming another LLM overrides the recorded one, and says so in one line.
    let other = home.path().join("other.toml");
    std::fs::copy(SCRIPT, &other).unwrap();
    let overridden = kt(
        home.path(),
        &[
            "resume",
            run.to_str().unwrap(),
            "--llm",
            &format!("scripted:{}", other.display()),
        ],
    );
    let stderr = text(&overridden.stderr);
    assert!(
        stderr.contains("overrides the run's recorded LLM"),
        "{stderr}"
    );
}

#[test]
fn without_a_gpu_an_ambiguous_prefix_lists_its_runs_and_a_testgen_run_says_what_to_run() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let run = stopped_run(home.path(), &out_dir);
    let id = run.file_name().unwrap().to_str().unwrap().to_string();
    // A second run with the same start: a `kt testgen` run of the same kernel.
    let twin = out_dir.join(format!("{id}-testgen"));
    std::fs::create_dir_all(&twin).unwrap();
    let mut meta = read_json(&run.join("run.json"));
    meta["strategy"] = "testgen".into();
    meta["run_id"] = format!("{id}-testgen").into();
    std::fs::write(twin.join("run.json"), meta.to_string()).unwrap();

    let prefix = &id[..8];
    let out = kt(
        home.path(),
        &["resume", prefix, "--out", out_dir.to_str().unwrap()],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("matches 2 runs") && stderr.contains(&id) && stderr.contains("-testgen"),
        "{stderr}"
    );

    let out = output(kt_command(home.path()).args(["resume", twin.to_str().unwrap()]));
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("is a `kt testgen` run")
            && stderr.contains("kt testgen naive-kernels/matmul.cu --kernel matrixMultiply --tests 1 --llm scripted:"),
        "{stderr}"
    );
    assert!(!stderr.contains("no strategy named"), "{stderr}");
}

/// Bytes under `dir`, every file counted.
fn disk_use(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                disk_use(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

#[test]
fn the_quick_start_without_a_gpu_leaves_under_10_mb_and_no_test_data() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    // README's quick start, as written (default number of tests).
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            "autonomous",
            "--replan",
            "3",
            "--llm",
            "replay:experiments/cassettes/matmul-autonomous.jsonl",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a CUDA GPU is needed")
            && stderr.contains("tests are made where they are used"),
        "{stderr}"
    );
    assert!(stderr.contains("kt resume"), "{stderr}");
    let run = only_entry(&out_dir);
    let bytes = disk_use(&run);
    assert!(bytes < 10 << 20, "{bytes} bytes in {}", run.display());
    assert!(!run.join("tests").exists());
    assert!(run.join("kernel_info.json").is_file(), "Stage 1 is kept");
    let result = read_json(&run.join("result.json"));
    assert_eq!(
        (&result["status"], &result["needs_gpu"]),
        (&"interrupted".into(), &true.into()),
        "{result}"
    );
}

/// Points `run`'s recorded LLM at `spec` (as a run made in another clone records it).
fn record_llm(run: &Path, spec: &str) {
    let mut meta = read_json(&run.join("run.json"));
    meta["llm"]["spec"] = spec.into();
    std::fs::write(run.join("run.json"), meta.to_string()).unwrap();
}

#[test]
fn a_run_handed_over_from_a_clone_at_another_path_finds_its_script_here_or_names_the_flag() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let run = stopped_run(home.path(), &out_dir);
    // made in a clone at /elsewhere/kt: the same script sits under this repository (kt runs from its root)
    record_llm(&run, &format!("scripted:/elsewhere/kt/{SCRIPT}"));
    let resumed = kt(home.path(), &["resume", run.to_str().unwrap()]);
    let stderr = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not here; using") && stderr.contains("a CUDA GPU is needed"),
        "{stderr}"
    );
    // a file found nowhere: the error says which flag names it
    record_llm(&run, "scripted:/elsewhere/kt/no-such-answers.toml");
    let refused = kt(home.path(), &["resume", run.to_str().unwrap()]);
    let stderr = text(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("not on this machine") && stderr.contains("--llm scripted:FILE"),
        "{stderr}"
    );
}

#[test]
fn transform_with_json_prints_the_result_when_it_stops_for_want_of_a_gpu() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--tests",
            "1",
            "--llm",
            &format!("scripted:{SCRIPT}"),
            "--out",
            out_dir.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)));
    assert_eq!(result["needs_gpu"], true, "{result}");
}

/// A kernel with a header of its own in `repo/inc`, transformed (scripted answers in `repo`) until it stops for
/// want of a GPU; the run is under `repo/runs`.
fn stopped_run_with_a_header(repo: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(repo.join("inc")).unwrap();
    std::fs::write(
        repo.join("inc/add.cuh"),
        "__device__ inline float add(float x, float y) { return x + y; }\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("k.cu"),
        "#include \"add.cuh\"\n__global__ void vectorAdd(const float* a, const float* b, float* c, int n)\n{\n    \
         int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n        c[i] = add(a[i], b[i]);\n    }\n}\n",
    )
    .unwrap();
    std::fs::copy(
        support::root().join("experiments/scripted/vectorAdd.toml"),
        repo.join("answers.toml"),
    )
    .unwrap();
    let path = |p: &str| repo.join(p).to_str().unwrap().to_string();
    let out = kt(
        repo,
        &[
            "transform",
            &path("k.cu"),
            "--include",
            &path("inc"),
            "--tests",
            "1",
            "--llm",
            &format!("scripted:{}", path("answers.toml")),
            "--out",
            &path("runs"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    only_entry(&repo.join("runs"))
}

/// `kt resume RUN` run from `cwd`, with `extra` arguments.
fn resume_from(cwd: &Path, home: &Path, run: &Path, extra: &[&str]) -> std::process::Output {
    let mut cmd = kt_command(home);
    cmd.current_dir(cwd)
        .env("KT_PROMPTS_DIR", support::root().join("prompts"))
        .args(["resume", run.to_str().unwrap()])
        .args(extra);
    output(&mut cmd)
}

/// Issue 49: run.json records the kernel file, its header directories and the answer file as absolute paths
/// of the clone the run was made in. Moved with its repository to another path, the run resumes from the
/// repository's root there; from anywhere else it says which flag names the headers, and with it resumes.
#[test]
fn a_run_moved_with_its_repository_finds_its_kernel_and_headers_or_names_include() {
    require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let old = home.path().join("clone-a");
    let run = stopped_run_with_a_header(&old);
    let meta = read_json(&run.join("run.json"));
    assert!(
        meta["settings"]["include_dirs"]
            .to_string()
            .contains("clone-a/inc"),
        "{meta}"
    );
    let new = home.path().join("elsewhere/clone-b");
    std::fs::create_dir_all(new.parent().unwrap()).unwrap();
    std::fs::rename(&old, &new).unwrap();
    let run = new.join("runs").join(run.file_name().unwrap());

    // from anywhere but the repository's root: the headers are nowhere, and the error names --include
    let lost = resume_from(
        home.path(),
        home.path(),
        &run,
        &[
            "--llm",
            &format!("scripted:{}", new.join("answers.toml").display()),
        ],
    );
    let stderr = text(&lost.stderr);
    assert_eq!(lost.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("clone-a/inc") && stderr.contains("--include DIR"),
        "{stderr}"
    );

    // from the repository's root at its new path: kernel, headers and answers are found there
    let resumed = resume_from(&new, home.path(), &run, &[]);
    let stderr = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");
    assert!(
        stderr.contains("header directory") && stderr.contains("clone-b/inc"),
        "{stderr}"
    );
    let meta = read_json(&run.join("run.json"));
    assert!(
        meta["settings"]["include_dirs"]
            .to_string()
            .contains("clone-b/inc"),
        "run.json points at this clone: {meta}"
    );

    // moved again: --include names the headers outright
    let third = home.path().join("clone-c");
    std::fs::rename(&new, &third).unwrap();
    let run = third.join("runs").join(run.file_name().unwrap());
    let named = resume_from(
        home.path(),
        home.path(),
        &run,
        &[
            "--include",
            third.join("inc").to_str().unwrap(),
            "--llm",
            &format!("scripted:{}", third.join("answers.toml").display()),
        ],
    );
    let stderr = text(&named.stderr);
    assert_eq!(named.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");
}
