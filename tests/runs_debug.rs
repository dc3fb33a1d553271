//! End-to-end tests of `kt runs`, `kt debug`, `kt replay`, `kt fork`, `kt resume` stopping at a breakpoint and
//! `kt graph export` with a run's path, through the real binary, on a run recorded with scripted LLM answers
//! and the fake tuning backend (made through kt-pipeline's library API: `kt transform` itself needs a GPU for
//! Stage 3). Everything the commands do afterwards is replayed from the run's journal: no GPU, no LLM service.
//! The HTML report is loaded in headless Chromium by an ignored test that scripts/test.sh runs where it is installed.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kt_pipeline::job::recorded_run::{record_matmul_run, write_script};
use serde_json::{Value, json};

mod support;
use support::{kt_command, output};
#[path = "support/browser.rs"]
mod browser;

/// Runs kt with its runs kept under `home/runs`, where [`record_run`] puts the recorded run.
fn kt(home: &Path, args: &[&str]) -> Output {
    output(
        kt_command(home)
            .env("KT_RUNS_DIR", home.join("runs"))
            .args(args),
    )
}

/// Runs kt, asserts success, returns stdout.
fn ok(home: &Path, args: &[&str]) -> String {
    let out = kt(home, args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "kt {args:?} failed\nstdout: {stdout}\nstderr: {stderr}"
    );
    stdout.into_owned()
}

fn ok_json(home: &Path, args: &[&str]) -> Value {
    let text = ok(home, args);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("kt {args:?} printed no JSON ({e}): {text}"))
}

/// Records the autonomous matmul run of kt-pipeline's fixture (two planned steps, both accepted: 20 ms ->
/// 10 ms -> 4 ms, then a replan that ends it) under `home/runs`. Returns the run id.
fn record_run(home: &Path) -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(record_matmul_run(&home.join("runs"))).run_id()
}

fn history_len(home: &Path, id: &str) -> usize {
    ok_json(home, &["debug", "history", id, "--json"])["checkpoints"]
        .as_array()
        .unwrap()
        .len()
}

/// The first checkpoint of the recorded run where `node` runs next.
fn before(home: &Path, id: &str, node: &str) -> u64 {
    let h = ok_json(home, &["debug", "history", id, "--json"]);
    h["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["branch"] == 0
                && c["next"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n.as_str().unwrap().starts_with(&format!("{node}#")))
        })
        .unwrap()["checkpoint"]
        .as_u64()
        .unwrap()
}

#[test]
fn runs_list_and_show_describe_a_recorded_run_step_by_step() {
    let home = tempfile::tempdir().unwrap();
    let id = record_run(home.path());
    let list = ok_json(home.path(), &["runs", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["status"], "finished");
    assert_eq!(list[0]["strategy"], "autonomous");
    assert!(
        (list[0]["speedup"].as_f64().unwrap() - 5.0).abs() < 1e-6,
        "{list}"
    );
    let table = ok(home.path(), &["runs", "list"]);
    assert!(table.contains(&id) && table.contains("5.00x"), "{table}");

    let show = ok(home.path(), &["runs", "show", &id[..20]]);
    for want in [
        "baseline",
        "plan",
        "apply",
        "select",
        "finish",
        "tunable block size: accepted",
        "register tiling",
        // The fixture's fake GPU profiles what the prompts read: the naive kernel (plan) and the best
        // kernel when the plan ran out (replan), not the first accepted step.
        "profiles (hardware counters, 2 kernel(s)",
        "naive kernel",
        "memory-bound",
    ] {
        assert!(show.contains(want), "`{want}` missing from:\n{show}");
    }
    let json = ok_json(home.path(), &["runs", "show", &id, "--json"]);
    assert_eq!(json["kernels"].as_array().unwrap().len(), 2);
    assert_eq!(json["profiles"].as_array().unwrap().len(), 2);
    let state = ok_json(
        home.path(),
        &[
            "debug", "state", &id, "--at", "latest", "--field", "profiles", "--json",
        ],
    );
    assert_eq!(state[0]["step"], "original", "{state}");
    assert!(
        state[0]["summary"]
            .as_str()
            .unwrap()
            .contains("Warps stall most on")
    );
    assert!(
        json["path"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["tokens_in"].as_u64().unwrap() > 0)
    );

    let missing = kt(home.path(), &["runs", "show", "no-such-run"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("kt runs list"));
}

#[test]
fn debug_node_replays_the_recorded_answer_and_commit_forks_with_only_the_changed_field() {
    let home = tempfile::tempdir().unwrap();
    let id = record_run(home.path());
    let n = history_len(home.path(), &id);

    // Replay mode: the recorded prompt and answer, the same update, the recorded route; history untouched.
    let at = before(home.path(), &id, "apply");
    let report = ok_json(
        home.path(),
        &[
            "debug",
            "node",
            &id,
            "apply",
            "--at",
            &at.to_string(),
            "--llm",
            "replay",
            "--json",
        ],
    );
    assert_eq!(report["matches_recorded"], true, "{report:#}");
    assert_eq!(report["route"], json!(["select"]));
    assert!(
        report["calls"][0]["answer"]
            .as_str()
            .unwrap()
            .contains("fake-tuning: ok 10.0")
    );
    assert!(
        report["calls"][0]["prompt"]
            .as_str()
            .unwrap()
            .contains("tunable block size")
    );
    assert_eq!(report["tuning"][0]["outcome"]["verdict"], "verified");
    assert_eq!(report["committed"], Value::Null);
    assert_eq!(
        history_len(home.path(), &id),
        n,
        "debug node without --commit leaves history unchanged"
    );
    let text = ok(home.path(), &["debug", "node", &id, "validate"]);
    assert!(
        text.contains("same update as the recorded run") && text.contains("history unchanged"),
        "{text}"
    );

    // --commit with the recorded answer: a new branch whose state equals the recorded step's.
    let recorded_child = ok_json(home.path(), &["debug", "history", &id, "--json"])["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["parent"] == at && c["branch"] == 0)
        .unwrap()["checkpoint"]
        .as_u64()
        .unwrap();
    let committed = ok_json(
        home.path(),
        &[
            "debug",
            "node",
            &id,
            "apply",
            "--at",
            &at.to_string(),
            "--commit",
            "--json",
        ],
    );
    let fork_cp = committed["committed"].as_u64().unwrap();
    assert_eq!(history_len(home.path(), &id), n + 1);
    let same = ok_json(
        home.path(),
        &[
            "debug",
            "diff",
            &id,
            &recorded_child.to_string(),
            &fork_cp.to_string(),
            "--json",
        ],
    );
    assert_eq!(
        same,
        json!([]),
        "replayed and committed: identical to the recording"
    );

    // A different (scripted) plan, committed: the diff against the recorded step shows the plan (and the
    // record of the call that produced it), nothing else.
    let plan_at = before(home.path(), &id, "plan");
    let script = home.path().join("plan.json");
    write_script(
        &script,
        &[(
            "stage3.plan",
            json!({"steps": ["only one step"]}).to_string(),
        )],
    );
    let override_file = home.path().join("prompt.txt");
    std::fs::write(&override_file, "Plan exactly one step.").unwrap();
    let planned = ok_json(
        home.path(),
        &[
            "debug",
            "node",
            &id,
            "plan",
            "--at",
            &plan_at.to_string(),
            "--llm",
            &format!("scripted:{}", script.display()),
            "--prompt-override",
            override_file.to_str().unwrap(),
            "--commit",
            "--json",
        ],
    );
    assert_eq!(planned["calls"][0]["prompt"], "Plan exactly one step.");
    assert_eq!(planned["calls"][0]["overridden"], true);
    let plan_child = plan_at + 1;
    let d = ok_json(
        home.path(),
        &[
            "debug",
            "diff",
            &id,
            &plan_child.to_string(),
            &planned["committed"].as_u64().unwrap().to_string(),
            "--json",
        ],
    );
    let fields: Vec<&str> = d
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"plan"), "{d:#}");
    assert!(
        fields.iter().all(|f| ["plan", "llm_calls"].contains(f)),
        "only the plan changed: {fields:?}"
    );

    // kt fork --set: exactly the field set.
    let forked = ok_json(
        home.path(),
        &[
            "fork",
            &id,
            "--at",
            &at.to_string(),
            "--set",
            "replans_used=1",
            "--json",
        ],
    );
    let d = ok_json(
        home.path(),
        &[
            "debug",
            "diff",
            &id,
            &at.to_string(),
            &forked["checkpoint"].as_u64().unwrap().to_string(),
            "--json",
        ],
    );
    assert_eq!(d.as_array().unwrap().len(), 1, "{d:#}");
    assert_eq!(d[0]["field"], "replans_used");
    assert_eq!(d[0]["leaves"][0]["after"], 1);
    // Code fields diff as unified diffs.
    let code_file = home.path().join("k.cu");
    std::fs::write(&code_file, "__global__ void k() {}\n// edited\n").unwrap();
    let forked = ok_json(
        home.path(),
        &[
            "fork",
            &id,
            "--at",
            "head",
            "--set-file",
            &format!("best.kernel.code={}", code_file.display()),
            "--json",
        ],
    );
    let text = ok(
        home.path(),
        &[
            "debug",
            "diff",
            &id,
            "head",
            &forked["checkpoint"].as_u64().unwrap().to_string(),
        ],
    );
    assert!(
        text.contains("best.kernel.code") && text.contains("+// edited") && text.contains("@@"),
        "{text}"
    );
    let state = ok(
        home.path(),
        &[
            "debug",
            "state",
            &id,
            "--at",
            "latest",
            "--field",
            "best.kernel.code",
        ],
    );
    assert_eq!(state.trim_end(), "__global__ void k() {}\n// edited");
}

#[test]
fn a_break_before_apply_stops_the_run_there_and_resume_finishes_it() {
    let home = tempfile::tempdir().unwrap();
    let id = record_run(home.path());
    let bp = ok_json(
        home.path(),
        &["debug", "break", &id, "--before", "apply", "--json"],
    );
    assert_eq!(bp["before"], json!(["apply"]));
    let bad = kt(home.path(), &["debug", "break", &id, "--before", "aply"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("apply"));

    let stopped = ok_json(home.path(), &["replay", &id, "--from", "input", "--json"]);
    assert_eq!(stopped["outcome"], "stopped", "{stopped:#}");
    assert!(
        stopped["stopped"]
            .as_str()
            .unwrap()
            .contains("before `apply`")
    );
    let h = ok_json(home.path(), &["debug", "history", &id, "--json"]);
    let last = h["checkpoints"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["next"], json!(["apply#0"]));
    assert!(last["stopped"].as_str().unwrap().contains("apply"));

    // `kt resume` continues from there: it steps over this stop and halts before the next apply (not an
    // error: exit 0, saying where it stopped and how to go on); with the breakpoint cleared it finishes, with
    // every answer and tuning result taken from the journal.
    let run_dir = root_of(home.path(), &id);
    let cassette = format!("replay:{}", run_dir.join("llm.jsonl").display());
    let main_files = |dir: &Path| {
        let mut files = vec![
            std::fs::read(dir.join("result.json")).unwrap(),
            std::fs::read(dir.join("best.cu")).unwrap(),
            std::fs::read(dir.join("report.md")).unwrap(),
        ];
        let mut kernels: Vec<PathBuf> = std::fs::read_dir(dir.join("kernels"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        kernels.sort();
        for k in kernels {
            files.push(k.to_string_lossy().into_owned().into_bytes());
            files.push(std::fs::read(k).unwrap());
        }
        files
    };
    let recorded = main_files(&run_dir);
    let again = kt(home.path(), &["resume", &id, "--llm", &cassette]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        again.status.success(),
        "a stop at a breakpoint is not an error: {stderr}"
    );
    let expected = format!("`kt resume {}` continues", run_dir.display());
    assert!(
        stderr.contains("stopped before apply at checkpoint ") && stderr.contains(&expected),
        "{stderr}"
    );
    let h = ok_json(home.path(), &["debug", "history", &id, "--json"]);
    let last = h["checkpoints"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["next"],
        json!(["apply#0"]),
        "stopped before the second apply: {last:#}"
    );
    assert!(last["stopped"].as_str().unwrap().contains("apply"));
    ok(home.path(), &["debug", "break", &id, "--clear"]);
    ok(home.path(), &["resume", &id, "--llm", &cassette]);
    let h = ok_json(home.path(), &["debug", "history", &id, "--json"]);
    let last = h["checkpoints"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["next"], json!([]), "finished: {last:#}");
    assert_ne!(last["branch"], 0, "the replay's branch, not the recording");

    // The branch's results went to branches/b<N>/; the main branch's recorded files are untouched.
    assert_eq!(
        main_files(&run_dir),
        recorded,
        "the main branch's result.json, best.cu, report.md and kernels/ must not change"
    );
    let branch_dir = run_dir
        .join("branches")
        .join(format!("b{}", last["branch"].as_u64().unwrap()));
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(branch_dir.join("result.json")).unwrap())
            .unwrap();
    assert_eq!(result["status"], "finished", "{result:#}");
    assert_eq!(result["branch"], json!(format!("b{}", last["branch"])));
    assert_eq!(result["best_time_ms"], 4.0);
    assert!(branch_dir.join("best.cu").is_file() && branch_dir.join("report.md").is_file());
    assert!(
        std::fs::read_dir(branch_dir.join("kernels"))
            .unwrap()
            .any(|e| e.unwrap().path().extension().is_some_and(|x| x == "cu")),
        "the branch's candidates are in its own kernels/"
    );
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        meta["status"], "finished",
        "run.json still describes the main branch"
    );
    let best = ok_json(
        home.path(),
        &[
            "debug", "state", &id, "--at", "latest", "--field", "best", "--json",
        ],
    );
    assert_eq!(best["time_ms"], 4.0);
}

fn root_of(home: &Path, id: &str) -> PathBuf {
    home.join("runs").join(id)
}

#[test]
fn graph_export_highlights_the_path_a_run_took() {
    let home = tempfile::tempdir().unwrap();
    let id = record_run(home.path());
    let dot = ok(home.path(), &["graph", "export", &id, "--format", "dot"]);
    assert!(dot.contains("\"plan\" [shape=box, style=filled"), "{dot}");
    assert!(
        dot.contains("\"breakdown\" [shape=box];"),
        "breakdown never ran, so it is not highlighted: {dot}"
    );
    let mermaid = ok(
        home.path(),
        &[
            "graph",
            "export",
            "autonomous",
            "--format",
            "mermaid",
            "--highlight",
            &id,
        ],
    );
    assert!(
        mermaid.contains("classDef visited") && mermaid.contains("linkStyle"),
        "{mermaid}"
    );
    let wrong = kt(
        home.path(),
        &["graph", "export", "explicit", "--highlight", &id],
    );
    assert!(!wrong.status.success());
}

/// Records a run in `home`, writes its HTML report and checks that the page is self-contained; returns its path.
fn html_report(home: &Path) -> PathBuf {
    let id = record_run(home);
    let out = home.join("report.html");
    let printed = ok_json(
        home,
        &[
            "runs",
            "report",
            &id,
            "--html",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(printed["report"], out.to_str().unwrap());
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("src=\"http") && !html.contains("<link"),
        "self-contained"
    );
    out
}

#[test]
fn the_html_report_is_self_contained() {
    let home = tempfile::tempdir().unwrap();
    html_report(home.path());
}

#[test]
#[ignore = "needs chromium; scripts/test.sh runs it where chromium is installed"]
fn the_html_report_renders_in_a_browser() {
    let home = tempfile::tempdir().unwrap();
    let out = html_report(home.path());
    let chromium = browser::find_chromium()
        .expect("chromium is not installed (Debian: apt-get install chromium; scripts/test.sh does it as root)");
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", out.display());
    let browse = |extra: &[&str]| {
        let mut args = browser::headless_flags(profile.path());
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(url.clone());
        Command::new(&chromium)
            .args(&args)
            .output()
            .expect("chromium runs")
    };
    let dom = browse(&["--dump-dom"]);
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    for part in [
        "summary",
        "graph-svg",
        "timeline-svg",
        "steps",
        "llm-calls",
        "kernels",
        "tuning",
        "speedup-svg",
    ] {
        assert!(
            dom_text.contains(&format!("id=\"{part}\"")),
            "the rendered page has no #{part}"
        );
    }
    assert_eq!(
        dom_text.matches("class=\"llm-call\"").count(),
        8,
        "one <details> per LLM call"
    );
    assert_eq!(
        dom_text.matches("class=\"kernel\"").count(),
        3,
        "one <details> per kernel version"
    );
    // KT_REPORT_SCREENSHOT=/some/file.png keeps the screenshot (and the page beside it) for a person to look at.
    let kept = std::env::var_os("KT_REPORT_SCREENSHOT").map(PathBuf::from);
    if let Some(k) = &kept {
        std::fs::copy(&out, k.with_extension("html")).unwrap();
    }
    let shot = kept.unwrap_or_else(|| home.path().join("report.png"));
    let taken = browse(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1280,2000",
    ]);
    assert!(
        taken.status.success(),
        "screenshot failed: {}",
        String::from_utf8_lossy(&taken.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.len() > 10_000 && png.starts_with(b"\x89PNG"),
        "a real screenshot ({} bytes)",
        png.len()
    );
}

/// Not a check: `KT_DEMO_HOME=/tmp/kt-demo cargo test --test runs_debug -- --ignored` leaves a recorded run under
/// /tmp/kt-demo/runs to try the commands on by hand (KT_RUNS_DIR=/tmp/kt-demo/runs kt runs list).
#[test]
#[ignore = "makes a demo run for people; run with --ignored and KT_DEMO_HOME"]
fn record_a_demo_run_to_try_the_commands_on() {
    let Some(home) = std::env::var_os("KT_DEMO_HOME").map(PathBuf::from) else {
        eprintln!("set KT_DEMO_HOME to the directory to record the demo run in");
        return;
    };
    std::fs::create_dir_all(&home).unwrap();
    let id = record_run(&home);
    eprintln!("recorded {}", home.join("runs").join(id).display());
}
