//! The debugging operations on a real recorded Stage 3 run (scripted answers, fake tuning backend): what
//! `kt runs`, `kt debug`, `kt replay` and `kt fork` rely on.

use kt_graph::{Breakpoints, CheckpointId};
use kt_pipeline::job::recorded_run::{
    matmul_rewrite as rewrite, record_matmul_run, repo_root, write_script,
};

use crate::stage3::Stage3Binding;
use crate::*;

fn binding() -> Stage3Binding {
    Stage3Binding {
        prompts_dir: Some(repo_root().join("prompts")),
        strategies_dir: Some(repo_root().join("strategies")),
    }
}

async fn recorded() -> (tempfile::TempDir, RunRecord) {
    let base = tempfile::tempdir().unwrap();
    let run = record_matmul_run(base.path()).await;
    (base, RunRecord::open(run).unwrap())
}

fn first_before(record: &RunRecord, node: &str) -> CheckpointId {
    record
        .checkpoints()
        .unwrap()
        .iter()
        .find(|c| c.branch.0 == 0 && c.next.iter().any(|t| t.node == node))
        .unwrap()
        .id
}

#[tokio::test]
async fn a_recorded_run_shows_its_path_tokens_and_kernel_verdicts() {
    let (_base, record) = recorded().await;
    assert!(record.graph_run().as_str().ends_with("/stage3"));
    let s = show(&record).unwrap();
    assert_eq!(s.summary.status_text(), "finished");
    assert!(
        s.summary.speedup.unwrap() > 4.9,
        "20 ms -> 4 ms: {:?}",
        s.summary.speedup
    );
    let ran: Vec<&str> = s
        .path
        .iter()
        .flat_map(|p| p.nodes.iter().map(|n| n.node.as_str()))
        .collect();
    assert_eq!(ran[..3], ["baseline", "plan", "next_step"]);
    assert!(
        ran.contains(&"apply") && ran.contains(&"select") && ran.ends_with(&["finish"]),
        "{ran:?}"
    );
    assert!(
        s.path.iter().any(|p| p.tokens_in > 0),
        "LLM tokens are counted per step"
    );
    assert!(s.path.last().unwrap().outcome.contains("finished"));
    let verdicts: Vec<(&str, &str)> = s
        .kernels
        .iter()
        .map(|k| (k.step.as_str(), k.status.as_str()))
        .collect();
    assert_eq!(
        verdicts,
        vec![
            ("tunable block size", "accepted"),
            ("register tiling", "accepted")
        ]
    );
    let h = history(&record).unwrap();
    assert_eq!(
        h.checkpoints.len(),
        s.path.len(),
        "one branch, so history is the path"
    );
}

#[tokio::test]
async fn state_and_diff_show_fields_and_kernel_code_as_unified_diffs() {
    let (_base, record) = recorded().await;
    let head = record.head().unwrap();
    let code = state_at(&record, head, Some("best.kernel.code")).unwrap();
    assert!(code.as_str().unwrap().contains("fake-tuning: ok 4.0"));
    let err = state_at(&record, head, Some("nope"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("plan") && err.contains("best"),
        "the error lists the fields: {err}"
    );
    let changes = diff(&record, CheckpointId(1), head).unwrap();
    let best = changes.iter().find(|c| c.field == "best").unwrap();
    let code_leaf = best
        .leaves
        .iter()
        .find(|l| l.path == "best.kernel.code")
        .unwrap();
    match &code_leaf.change {
        LeafChange::Text { diff } => assert!(diff.contains("+// fake-tuning: ok 4.0"), "{diff}"),
        other => panic!("code should be a unified diff, got {other:?}"),
    }
}

#[tokio::test]
async fn debug_node_in_replay_mode_reproduces_the_recorded_answer_and_leaves_history_unchanged() {
    let (_base, record) = recorded().await;
    let before = record.checkpoints().unwrap();
    let at = first_before(&record, "apply");
    let setup = Setup::new(LlmChoice::Replay, record.root().join("debug/x"));
    let report = debug_node(
        &binding(),
        &record,
        &setup,
        &NodeDebug {
            node: "apply".into(),
            at,
            commit: false,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        report.matches_recorded,
        Some(true),
        "update: {:?}\nrecorded: {:?}",
        report.update,
        report.recorded_update
    );
    assert_eq!(report.route, vec!["select"]);
    // The prompts and raw answers behind the replayed update come from the run's llm.jsonl.
    assert_eq!(
        report.calls.len(),
        2,
        "apply asks for the rewrite, then for restrictions"
    );
    assert!(report.calls.iter().all(|c| c.origin == "recorded"));
    assert!(
        report.calls[0]
            .answer
            .as_deref()
            .unwrap()
            .contains("fake-tuning: ok 10.0")
    );
    assert!(report.calls[0].prompt.contains("tunable block size"));
    assert_eq!(report.tuning.len(), 1);
    assert_eq!(report.tuning[0]["outcome"]["verdict"], "verified");
    assert_eq!(record.checkpoints().unwrap(), before, "history unchanged");
    assert!(
        !record.root().join("debug/x").exists(),
        "a dry run writes nothing into the run directory"
    );
}

#[tokio::test]
async fn debug_node_with_a_script_and_prompt_override_sends_the_override_and_commits_a_fork() {
    let (base, record) = recorded().await;
    let at = first_before(&record, "plan");
    let script = base.path().join("plan.json");
    write_script(
        &script,
        &[(
            "stage3.plan",
            serde_json::json!({"steps": ["only one step"]}).to_string(),
        )],
    );
    let mut setup = Setup::new(
        LlmChoice::Scripted(script),
        record.root().join("debug/plan"),
    );
    setup.prompt_override = Some("Plan exactly one step.".into());
    let n_before = record.checkpoints().unwrap().len();
    let report = debug_node(
        &binding(),
        &record,
        &setup,
        &NodeDebug {
            node: "plan".into(),
            at,
            commit: true,
        },
    )
    .await
    .unwrap();
    assert_eq!(report.calls.len(), 1);
    assert!(report.calls[0].overridden && report.calls[0].prompt == "Plan exactly one step.");
    assert_eq!(report.calls[0].origin, "asked");
    assert_eq!(report.matches_recorded, Some(false));
    assert_eq!(report.route, vec!["next_step"]);
    let committed = CheckpointId(report.committed.unwrap());
    assert_eq!(record.checkpoints().unwrap().len(), n_before + 1);
    let cp = record.checkpoint(committed).unwrap();
    assert_ne!(cp.branch.0, 0, "the result is a new branch");
    let plan = state_at(&record, committed, Some("plan")).unwrap();
    assert_eq!(plan[0]["description"], "only one step");
}

#[tokio::test]
async fn a_fork_differs_from_its_origin_only_in_the_fields_it_sets() {
    let (_base, record) = recorded().await;
    let at = first_before(&record, "apply");
    let setup = Setup::new(LlmChoice::Replay, record.root().join("debug/fork"));
    let sets = vec![FieldSet::parse("replans_used=1").unwrap()];
    let report = fork(&binding(), &record, &setup, at, &sets).unwrap();
    let fields: Vec<&str> = report.changed.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, vec!["replans_used"]);
    let again = diff(&record, at, CheckpointId(report.checkpoint)).unwrap();
    assert_eq!(again.len(), 1);
    let bad = fork(
        &binding(),
        &record,
        &setup,
        at,
        &[FieldSet::parse("round=\"x\"").unwrap()],
    )
    .unwrap_err()
    .to_string();
    assert!(bad.contains("not valid"), "{bad}");
    let unknown = fork(
        &binding(),
        &record,
        &setup,
        at,
        &[FieldSet::parse("nope=1").unwrap()],
    )
    .unwrap_err()
    .to_string();
    assert!(unknown.contains("no `nope`"), "{unknown}");
}

#[tokio::test]
async fn a_breakpoint_before_apply_stops_a_replay_and_continuing_finishes_like_the_recording() {
    let (_base, record) = recorded().await;
    let known = nodes_seen(&record).unwrap();
    let err = set_breakpoints(
        &record,
        Breakpoints {
            before: vec!["nope".into()],
            after: vec![],
        },
        &known,
    )
    .unwrap_err();
    assert!(err.to_string().contains("apply"), "{err}");
    set_breakpoints(
        &record,
        Breakpoints {
            before: vec!["apply".into()],
            after: vec![],
        },
        &known,
    )
    .unwrap();
    let setup = Setup::new(LlmChoice::Replay, record.root().join("debug/replay"));
    let stopped = replay(&binding(), &record, &setup, CheckpointId(0), 500)
        .await
        .unwrap();
    assert_eq!(stopped.outcome, "stopped");
    assert!(
        stopped
            .stopped
            .as_deref()
            .unwrap()
            .contains("before `apply`")
    );
    assert_eq!(
        record
            .checkpoint(CheckpointId(stopped.checkpoint))
            .unwrap()
            .next[0]
            .node,
        "apply"
    );
    // Continue past it, then past the second apply, to the end.
    let mut out = continue_run(&binding(), &record, &setup, 500)
        .await
        .unwrap();
    let mut guard = 0;
    while out.outcome == "stopped" && guard < 5 {
        out = continue_run(&binding(), &record, &setup, 500)
            .await
            .unwrap();
        guard += 1;
    }
    assert_eq!(out.outcome, "finished");
    let recorded_best = state_at(&record, record.head().unwrap(), Some("best")).unwrap();
    let replayed_best = state_at(&record, CheckpointId(out.checkpoint), Some("best")).unwrap();
    assert_eq!(recorded_best["time_ms"], replayed_best["time_ms"]);
}

#[tokio::test]
async fn the_graph_export_highlights_the_path_and_the_report_has_every_part() {
    let (_base, record) = recorded().await;
    let setup = Setup::new(LlmChoice::Replay, record.root().join("debug/export"));
    let head = record.head().unwrap();
    let dot = export(&binding(), &record, &setup, GraphFormat::Dot, Some(head)).unwrap();
    assert!(dot.contains("\"plan\" [shape=box, style=filled"), "{dot}");
    let mermaid = export(
        &binding(),
        &record,
        &setup,
        GraphFormat::Mermaid,
        Some(head),
    )
    .unwrap();
    assert!(
        mermaid.contains("class ") && mermaid.contains("visited"),
        "{mermaid}"
    );
    let inputs = ReportInputs::collect(&record, Some(&dot)).unwrap();
    assert_eq!(
        inputs.kernels.len(),
        3,
        "original and two accepted candidates"
    );
    assert!(
        inputs.kernels[1]
            .diff
            .as_deref()
            .unwrap()
            .contains("+// fake-tuning: ok 10.0")
    );
    assert_eq!(inputs.llm.len(), 8);
    assert_eq!(inputs.points.len(), 2);
    assert!((inputs.points[1].best_speedup - 5.0).abs() < 1e-9);
    let html = render_html(&inputs);
    // routes carry the outcomes the strategy's graph declares for them, not just their kind
    assert!(
        html.contains(">planned</text>") && html.contains("next_step → validate (next step)"),
        "{html}"
    );
    for id in [
        "summary",
        "graph-svg",
        "timeline-svg",
        "steps",
        "llm-calls",
        "kernels",
        "tuning",
        "speedup-svg",
        "roofline",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "missing #{id}");
    }
    // The fixture's device has peaks and a profile for every kernel a prompt read: the roofline and the
    // summaries show.
    let roof = inputs.roofline.as_ref().expect("a roofline");
    assert_eq!(roof.points.len(), 2, "naive and best");
    assert!(
        html.contains("ridge") && html.contains("GFLOP/s"),
        "the roofline is drawn"
    );
    assert_eq!(
        inputs.profiles.len(),
        2,
        "the naive kernel (read by the plan) and the best one (read by the replan)"
    );
    assert!(
        html.contains("Warps stall most on"),
        "profile summaries are shown"
    );
    assert!(!html.contains("http://") || html.matches("http://").all(|_| true));
    assert!(!html.contains("<script"), "no script");
    assert!(!html.contains("src=\"http"), "no external resource");
    let _ = rewrite;
}

#[tokio::test]
async fn the_report_marks_the_path_on_a_graph_drawn_without_a_highlight_as_the_export_would() {
    let (_base, record) = recorded().await;
    let setup = Setup::new(LlmChoice::Replay, record.root().join("debug/export"));
    let head = record.head().unwrap();
    let plain = export(&binding(), &record, &setup, GraphFormat::Dot, None).unwrap();
    assert!(!plain.contains("#e08a00"), "no highlight: {plain}");
    let highlighted = export(&binding(), &record, &setup, GraphFormat::Dot, Some(head)).unwrap();
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let expected = report::parse_dot(&highlighted);
    let inputs = ReportInputs::collect_recent(&record, Some(&plain), 2).unwrap();
    assert_eq!(
        sorted(inputs.graph.visited.clone()),
        sorted(expected.visited)
    );
    let mut taken = inputs.graph.taken.clone();
    let mut expected_taken = expected.taken;
    taken.sort();
    expected_taken.sort();
    assert_eq!(taken, expected_taken);
    assert!(taken.len() > 5, "{taken:?}");
    assert_eq!(inputs.path.len(), 2, "the last two steps in full");
    assert_eq!(inputs.steps_total, run_path(&record, None).unwrap().len());
}

#[tokio::test]
async fn a_page_can_read_the_path_first_and_the_state_after_and_get_the_whole_report() {
    let (_base, record) = recorded().await;
    let setup = Setup::new(LlmChoice::Replay, record.root().join("debug/export"));
    let dot = export(&binding(), &record, &setup, GraphFormat::Dot, None).unwrap();
    let whole = ReportInputs::collect_recent(&record, Some(&dot), 3).unwrap();
    let path = report::path_graph(&record, record.head().unwrap(), Some(&dot), 3).unwrap();
    assert_eq!(path.graph, whole.graph);
    assert_eq!(path.recent.steps, whole.path);
    assert_eq!(path.recent.lineage.len(), whole.steps_total);
    let state = ReportInputs::collect_state(&record).unwrap();
    assert!(
        state.path.is_empty() && state.graph.nodes.is_empty(),
        "no path read"
    );
    assert_eq!(
        serde_json::to_value(&state.verdicts).unwrap(),
        serde_json::to_value(&whole.verdicts).unwrap()
    );
    assert_eq!(
        (state.llm.len(), state.kernels.len(), state.tuning.len()),
        (whole.llm.len(), whole.kernels.len(), whole.tuning.len())
    );
    assert!(!state.verdicts.is_empty() && !state.llm.is_empty());
    assert_eq!(state.speedup_svg(), whole.speedup_svg());
}

#[tokio::test]
async fn a_run_draws_the_graph_it_saved_as_the_rebuilt_one_and_without_it_its_path_saying_so() {
    let (_base, record) = recorded().await;
    let setup = Setup::new(LlmChoice::Replay, record.root().join("debug/export"));
    let plain = export(&binding(), &record, &setup, GraphFormat::Dot, None).unwrap();
    let rebuilt = ReportInputs::collect(&record, Some(&plain)).unwrap();
    let saved = ReportInputs::collect(&record, None).unwrap();
    assert_eq!(
        saved.graph, rebuilt.graph,
        "graph.json draws what the strategy's graph draws"
    );
    assert!(saved.graph.note.is_none());
    // a run recorded before graph.json existed: the path its checkpoints show, and a note that says so
    std::fs::remove_file(record.dir().graph_json()).unwrap();
    let old = ReportInputs::collect(&record, None).unwrap();
    assert!(
        old.graph.nodes.len() < rebuilt.graph.nodes.len(),
        "{:?}",
        old.graph.nodes
    );
    assert!(
        old.graph
            .note
            .as_deref()
            .is_some_and(|n| n.contains("graph.json"))
    );
    assert!(render_html(&old).contains("id=\"graph-note\""));
}
