//! `kt experiment slurm` on a real SLURM: a one-node cluster on this machine (scripts/slurm-local.sh, which
//! installs slurm-wlm and munge as root on Debian when missing), the generated submit.sh, the array and the
//! collection job run by slurmctld/slurmd, and a requeued task whose cell resumes.
//!
//! The tests fail, with the script's message, where SLURM cannot run (not root, not Debian): they are the
//! evidence that the job scripts work on the real engine, so they must not pass without it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::lines;
use super::support::{kt_command, output, root, text};

/// One cluster at a time: both tests use this machine as their node.
static CLUSTER: Mutex<()> = Mutex::new(());

/// A running single-node cluster, stopped (every job cancelled, every daemon ended) when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("kt-slurm")
            .tempdir()
            .unwrap();
        let script = root().join("scripts/slurm-local.sh");
        let run = |what: &str| {
            Command::new(&script)
                .arg(what)
                .env("KT_SLURM_DIR", dir.path())
                .env("KT_SLURM_PORT", "16917")
                .output()
                .unwrap()
        };
        for step in ["install", "start"] {
            let o = run(step);
            assert!(
                o.status.success(),
                "scripts/slurm-local.sh {step} failed (exit {:?}); this test needs a local SLURM:\n{}{}",
                o.status.code(),
                text(&o.stdout),
                text(&o.stderr)
            );
        }
        Cluster {
            conf: dir.path().join("slurm.conf"),
            dir,
        }
    }

    /// A SLURM client command (sbatch, squeue, scontrol) talking to this cluster.
    fn client(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", &self.conf);
        cmd
    }

    fn run(&self, program: &str, args: &[&str]) -> String {
        let o = output(self.client(program).args(args));
        assert!(
            o.status.success(),
            "{program} {args:?}: {}",
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    /// Submits with the generated submit.sh; returns the array and the collection job's ids.
    fn submit(&self, out: &Path, env: &[(&str, &str)]) -> (String, String) {
        let mut cmd = self.client("bash");
        cmd.arg(out.join("slurm/submit.sh"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = output(&mut cmd);
        assert!(o.status.success(), "submit.sh: {}", text(&o.stderr));
        let said = text(&o.stdout);
        // "submitted array job 12 (3 cells) and collection job 13"
        let words: Vec<&str> = said.split_whitespace().collect();
        assert_eq!(words[..3], ["submitted", "array", "job"], "{said}");
        (words[3].to_string(), words.last().unwrap().to_string())
    }

    /// Waits until the cluster (this test's own) has no job left, queued, running or completing.
    fn wait(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let left = self.run("squeue", &["-h", "-o", "%i %T"]);
            if left.trim().is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "jobs still queued after {limit:?}:\n{left}\nslurmctld log:\n{}",
                std::fs::read_to_string(self.dir.path().join("slurmctld.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(root().join("scripts/slurm-local.sh"))
            .arg("stop")
            .env("KT_SLURM_DIR", self.dir.path())
            .output();
    }
}

fn records(out: &Path) -> Vec<serde_json::Value> {
    lines(&out.join("cells.jsonl"))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Everything the jobs wrote to their logs, for failure messages.
fn job_logs(out: &Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(out.join("slurm/logs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        all.push_str(&format!("--- {}\n{text}", entry.path().display()));
    }
    all
}

/// The run directories under a cell's directory.
fn runs(cell_dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(cell_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("run.json").is_file())
        .collect()
}

/// `kt experiment slurm` for the design, tasks asking for no GPU (this node has none) and one CPU.
fn write_scripts(home: &Path, design: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "experiment",
        "slurm",
        design.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--partition",
        "debug",
        "--gpus-per-task",
        "0",
        "--cpus-per-task",
        "1",
        "--time",
        "00:15:00",
    ];
    args.extend(extra);
    let o = output(kt_command(home).args(&args).env_remove("KT_EXPERIMENT_KT"));
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn a_slurm_array_runs_every_cell_once_collects_a_report_and_a_resubmission_skips_final_cells() {
    let _one = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    let cluster = Cluster::start();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("k")).unwrap();
    std::fs::copy(
        root().join("naive-kernels/vectorAdd.cu"),
        dir.join("k/vectorAdd.cu"),
    )
    .unwrap();
    // The smoke experiment's scripted answers, with test inputs of a few thousand floats instead of the
    // 3e8 that a GPU needs for a 1 ms kernel: this node has no GPU, so the cells stop before timing.
    let answers =
        std::fs::read_to_string(root().join("experiments/scripted/vectorAdd.toml")).unwrap();
    let small = answers.replace("n = 300_000_001 + 2 * seed", "n = 4_097 + 2 * seed");
    assert_ne!(
        small, answers,
        "the size line of the scripted generator changed"
    );
    std::fs::write(dir.join("vectorAdd.toml"), small).unwrap();
    let design = dir.join("slurm-e2e.toml");
    std::fs::write(
        &design,
        r#"
name = "slurm-e2e"
kernels = ["k/vectorAdd.cu"]
models = ["scripted:vectorAdd.toml"]
settings = { tests = 1 }

[[study]]
name = "cells"
strategies = ["one-prompt", "explicit"]

# A budget too small for any run: the cell is stopped at once and recorded over budget, a final outcome.
[[study]]
name = "tiny-budget"
strategies = ["autonomous"]
budget = { time = "1ms" }
"#,
    )
    .unwrap();
    let out = dir.join("out");
    write_scripts(dir, &design, &out, &[]);
    let cells = lines(&out.join("slurm/cells.txt"));
    assert_eq!(cells.len(), 3);

    cluster.submit(&out, &[]);
    cluster.wait(Duration::from_secs(600));

    // Every task ran its cell exactly once, and every cell's outcome is recorded.
    let first = records(&out);
    assert_eq!(first.len(), 3, "{first:#?}");
    for id in &cells {
        let cell_dir = out.join("cells").join(id);
        let record = first.iter().find(|r| r["cell_id"] == id.as_str()).unwrap();
        let task_log = std::fs::read_to_string(out.join(format!("slurm/logs/{id}.log"))).unwrap();
        assert_eq!(task_log.matches(" (restart 0) ").count(), 1, "{task_log}");
        assert!(cell_dir.join("attempt-1.log").is_file());
        assert!(!cell_dir.join("attempt-2.log").exists());
        let status = record["status"].as_str().unwrap();
        if id.contains("autonomous") {
            assert_eq!(status, "over_budget", "{record:#}");
            continue;
        }
        // Without a GPU the run stops where it needs one: saved, resumable, and said plainly.
        assert!(
            ["needs_gpu", "finished"].contains(&status),
            "{record:#}\n{task_log}"
        );
        if status == "needs_gpu" {
            assert!(
                record["error"].as_str().unwrap().starts_with("needs a GPU"),
                "{record:#}"
            );
            assert_eq!(record["result"]["status"], "interrupted");
            assert_eq!(runs(&cell_dir).len(), 1);
        }
    }
    let report = std::fs::read_to_string(out.join("report/report.md")).unwrap();
    assert!(report.contains("# Report: slurm-e2e"), "{report}");
    assert!(report.contains("3 cells recorded of 3 planned"), "{report}");
    let collected: Vec<_> = std::fs::read_dir(out.join("slurm/logs"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("collect-"))
        })
        .collect();
    assert_eq!(collected.len(), 1, "one collection job ran");

    // Second submission: the final cell is skipped; cells that stopped for want of a GPU are resumed (their
    // run continues from its checkpoint: still one run directory), not started again.
    cluster.submit(&out, &[]);
    cluster.wait(Duration::from_secs(600));
    for id in &cells {
        let cell_dir = out.join("cells").join(id);
        let task_log = std::fs::read_to_string(out.join(format!("slurm/logs/{id}.log"))).unwrap();
        assert_eq!(task_log.matches(" (restart 0) ").count(), 2, "{task_log}");
        let first_status = first.iter().find(|r| r["cell_id"] == id.as_str()).unwrap()["status"]
            .as_str()
            .unwrap()
            .to_string();
        if first_status == "needs_gpu" {
            let resumed = std::fs::read_to_string(cell_dir.join("attempt-2.log")).unwrap();
            assert!(resumed.contains("a CUDA GPU is needed"), "{resumed}");
            assert_eq!(runs(&cell_dir).len(), 1, "resumed, not restarted");
        } else {
            assert!(
                task_log.contains(&format!("{first_status} {id}")),
                "run-cell reports the recorded outcome: {task_log}"
            );
            assert!(!cell_dir.join("attempt-2.log").exists(), "{id} was skipped");
        }
    }
}

#[test]
fn a_requeued_task_resumes_its_cell_which_finishes_once() {
    let _one = CLUSTER.lock().unwrap_or_else(|p| p.into_inner());
    // On a loaded machine SLURM itself now and then drops a requeued array task (it never starts again and
    // the queue empties, `(restart 1)` never logged): that says nothing of kt, so such a try is made again.
    for last in [false, true] {
        if requeue_once(last) {
            return;
        }
        eprintln!("SLURM never restarted the requeued task; trying the scenario again");
    }
}

/// One requeue scenario; false (only when not `last`) when SLURM never restarted the requeued task.
fn requeue_once(last: bool) -> bool {
    let cluster = Cluster::start();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("k")).unwrap();
    std::fs::write(dir.join("k/alpha.cu"), "__global__ void k(float* a) {}\n").unwrap();
    let design = dir.join("requeue.toml");
    std::fs::write(
        &design,
        "name = \"requeue\"\nkernels = [\"k/alpha.cu\"]\nstrategies = [\"explicit\"]\nmodels = [\"scripted:s.toml\"]\n",
    )
    .unwrap();
    // The cells are run by the fake kt of kt-experiments' tests: 6 s of work, interruptible, resumable.
    let fake = dir.join("fake-kt.sh");
    std::fs::copy(root().join("crates/kt-experiments/tests/fake-kt.sh"), &fake).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = dir.join("invocations.log");
    let out = dir.join("out");
    write_scripts(dir, &design, &out, &["--requeue"]);
    let array_script = std::fs::read_to_string(out.join("slurm/cells.sbatch")).unwrap();
    assert!(
        array_script.contains("#SBATCH --requeue\n"),
        "{array_script}"
    );

    let env = [
        ("KT_EXPERIMENT_KT", fake.to_str().unwrap()),
        ("FAKE_KT_LOG", log.to_str().unwrap()),
        ("FAKE_KT_SLEEP", "6"),
    ];
    let (array, _collect) = cluster.submit(&out, &env);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !lines(&log).iter().any(|l| l.starts_with("working ")) {
        assert!(
            Instant::now() < deadline,
            "the cell never started:\n{}\n{}",
            cluster.run("squeue", &[]),
            job_logs(&out)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Preemption, as an admin or a higher-priority job causes it.
    let task = format!("{array}_0");
    cluster.run("scontrol", &["requeue", &task]);
    // SLURM holds a requeued job for a while before it is eligible again; let it start now.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = cluster.run("squeue", &["-h", "-o", "%T", "-j", &task]);
        if state.trim() == "PENDING" {
            break;
        }
        assert!(Instant::now() < deadline, "not requeued: {state}");
        std::thread::sleep(Duration::from_millis(200));
    }
    cluster.run(
        "scontrol",
        &["update", &format!("JobId={task}"), "StartTime=now"],
    );
    cluster.wait(Duration::from_secs(300));
    if !last && !job_logs(&out).contains(" (restart 1) ") {
        return false;
    }

    let calls = lines(&log);
    let count = |what: &str| calls.iter().filter(|l| l.starts_with(what)).count();
    assert_eq!(
        (count("transform "), count("resume ")),
        (1, 1),
        "{calls:?}\n{}",
        job_logs(&out)
    );
    let recorded = records(&out);
    assert_eq!(
        recorded.len(),
        1,
        "the cell finished once: {recorded:#?}\n{calls:?}\n{}",
        job_logs(&out)
    );
    assert_eq!(recorded[0]["status"], "finished");
    assert_eq!(recorded[0]["attempts"], 2);
    let id = recorded[0]["cell_id"].as_str().unwrap();
    assert_eq!(
        runs(&out.join("cells").join(id)).len(),
        1,
        "resumed, not restarted"
    );
    let task_log = std::fs::read_to_string(out.join(format!("slurm/logs/{id}.log"))).unwrap();
    assert!(
        task_log.contains(" (restart 0) ") && task_log.contains(" (restart 1) "),
        "{task_log}"
    );
    assert!(out.join("report/report.md").is_file());
    true
}
