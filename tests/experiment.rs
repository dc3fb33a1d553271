//! End-to-end tests of `kt experiment` through the real binary, with cells run by the fake kt of
//! kt-experiments' tests (crates/kt-experiments/tests/fake-kt.sh): Ctrl-C (a real SIGINT to kt) stops a
//! running experiment so that a rerun completes it without running any cell twice; then report and slurm.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
// `kt experiment slurm` on a real one-node SLURM (tests/experiment/slurm.rs).
#[path = "experiment/slurm.rs"]
mod slurm;
use support::{output, root, text};

struct Env {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    design: PathBuf,
    out: PathBuf,
    fake: PathBuf,
    log: PathBuf,
}

fn setup() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    std::fs::create_dir_all(dir.join("k")).unwrap();
    for k in ["alpha", "beta"] {
        std::fs::write(
            dir.join(format!("k/{k}.cu")),
            "__global__ void k(float* a) {}\n",
        )
        .unwrap();
    }
    let design = dir.join("exp.toml");
    std::fs::write(
        &design,
        "name = \"e2e\"\nkernels = [\"k/*.cu\"]\nmodels = [\"scripted:s.toml\"]\nrepeats = 2\n\
         strategies = [\"one-prompt\", \"explicit\", { name = \"autonomous\", grid = { replan = [0, 3] } }]\n",
    )
    .unwrap();
    // The fake reads its settings from the environment, which kt passes on to the cells.
    let fake = dir.join("fake-kt.sh");
    std::fs::copy(root().join("crates/kt-experiments/tests/fake-kt.sh"), &fake).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    Env {
        out: dir.join("out"),
        log: dir.join("invocations.log"),
        design,
        fake,
        dir,
        _dir: tmp,
    }
}

fn kt(env: &Env, args: &[&str], sleep: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kt"));
    cmd.args(args)
        .current_dir(&env.dir)
        .env("KT_EXPERIMENT_KT", &env.fake)
        .env("FAKE_KT_LOG", &env.log)
        .env("FAKE_KT_SLEEP", sleep)
        .env_remove("KT_EXPERIMENTS_DIR");
    cmd
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn ctrl_c_stops_an_experiment_and_a_rerun_completes_it_running_no_cell_twice() {
    let env = setup();
    let design = env.design.to_str().unwrap();
    let out = env.out.to_str().unwrap();

    let listed = output(&mut kt(
        &env,
        &["experiment", "cells", design, "--json"],
        "0",
    ));
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let cells: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        cells.as_array().unwrap().len(),
        16,
        "2 kernels × 4 strategy variants × 2 repeats"
    );

    // First run: interrupt with SIGINT once a few cells are recorded.
    let child = kt(
        &env,
        &[
            "experiment",
            "run",
            design,
            "--out",
            out,
            "--jobs",
            "2",
            "--quiet",
        ],
        "0.3",
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines(&env.out.join("cells.jsonl")).len() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // What Ctrl-C in a terminal sends.
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let first = child.wait_with_output().unwrap();
    assert_eq!(
        first.status.code(),
        Some(130),
        "stopped: {}\n{}",
        text(&first.stdout),
        text(&first.stderr)
    );
    assert!(
        text(&first.stdout).contains("run the same command again"),
        "{}",
        text(&first.stdout)
    );
    let after_first = lines(&env.out.join("cells.jsonl")).len();
    assert!((4..16).contains(&after_first), "{after_first}");

    // Rerun: completes.
    let second = output(&mut kt(
        &env,
        &[
            "experiment",
            "run",
            design,
            "--out",
            out,
            "--jobs",
            "2",
            "--json",
        ],
        "0.05",
    ));
    assert!(
        second.status.success(),
        "{}\n{}",
        text(&second.stdout),
        text(&second.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(summary["skipped"], after_first);
    assert_eq!(lines(&env.out.join("cells.jsonl")).len(), 16);

    let calls = lines(&env.log);
    let mut transformed: Vec<&str> = calls
        .iter()
        .filter_map(|l| l.strip_prefix("transform "))
        .collect();
    transformed.sort_unstable();
    let n = transformed.len();
    transformed.dedup();
    assert_eq!(
        (n, transformed.len()),
        (16, 16),
        "each cell transformed exactly once: {calls:?}"
    );

    // Report from the experiment directory.
    let report = output(&mut kt(
        &env,
        &["experiment", "report", out, "--format", "json"],
        "0",
    ));
    assert!(report.status.success(), "{}", text(&report.stderr));
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["planned"], 16);
    assert_eq!(report["recorded"], 16);
    assert_eq!(report["strategies"].as_array().unwrap().len(), 4);
    for plot in ["gain_per_kernel", "time_vs_gain", "tokens_vs_gain"] {
        for ext in ["png", "svg"] {
            assert!(
                env.out.join(format!("report/{plot}.{ext}")).is_file(),
                "{plot}.{ext}"
            );
        }
    }
    assert!(env.out.join("report/report.json").is_file());

    // SLURM export beside it.
    let slurm = output(&mut kt(
        &env,
        &[
            "experiment",
            "slurm",
            design,
            "--out",
            out,
            "--partition",
            "gpu",
        ],
        "0",
    ));
    assert!(slurm.status.success(), "{}", text(&slurm.stderr));
    assert_eq!(lines(&env.out.join("slurm/cells.txt")).len(), 16);
    let array = std::fs::read_to_string(env.out.join("slurm/cells.sbatch")).unwrap();
    assert!(array.contains("#SBATCH --array=0-15"), "{array}");
}

#[test]
fn run_cell_runs_one_cell_and_then_leaves_it_alone() {
    let env = setup();
    let design = env.design.to_str().unwrap();
    let out = env.out.to_str().unwrap();
    let listed = output(&mut kt(
        &env,
        &["experiment", "cells", design, "--json"],
        "0",
    ));
    let cells: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = cells[3]["id"].as_str().unwrap().to_string();

    for _ in 0..2 {
        let o = output(&mut kt(
            &env,
            &[
                "experiment",
                "run-cell",
                design,
                "--cell",
                &id,
                "--out",
                out,
            ],
            "0",
        ));
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            text(&o.stdout).starts_with("finished "),
            "{}",
            text(&o.stdout)
        );
    }
    assert_eq!(
        lines(&env.log)
            .iter()
            .filter(|l| l.starts_with("transform "))
            .count(),
        1
    );

    let unknown = output(&mut kt(
        &env,
        &[
            "experiment",
            "run-cell",
            design,
            "--cell",
            "nope",
            "--out",
            out,
        ],
        "0",
    ));
    assert!(!unknown.status.success());
    assert!(
        text(&unknown.stderr).contains("no cell `nope`"),
        "{}",
        text(&unknown.stderr)
    );
}

#[test]
fn relative_design_and_default_output_paths_work_from_any_directory() {
    let env = setup();
    let elsewhere = env.dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let o = output(
        kt(
            &env,
            &["experiment", "run", "../exp.toml", "--jobs", "2", "--quiet"],
            "0",
        )
        .current_dir(&elsewhere),
    );
    assert!(
        o.status.success(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let out = elsewhere.join("kt-experiments/e2e");
    assert_eq!(lines(&out.join("cells.jsonl")).len(), 16);
    let calls = lines(&env.log);
    let transforms: Vec<&str> = calls
        .iter()
        .filter_map(|l| l.strip_prefix("transform "))
        .collect();
    assert_eq!(transforms.len(), 16);
    for dir in transforms {
        assert!(
            Path::new(dir).starts_with(&out),
            "{dir} is under {}",
            out.display()
        );
    }
}
