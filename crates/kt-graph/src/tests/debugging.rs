use super::*;
use crate::{
    Breakpoints, Executor, ExportOptions, GraphError, MemoryStore, NoError, RunId, RunOptions,
    StopReason,
};

fn pipeline() -> CompiledGraph<Loop> {
    let mut b = GraphBuilder::<Loop>::new();
    for name in ["parse", "plan", "apply"] {
        b.node(
            name,
            node_fn(move |s: Arc<Loop>, c: NodeContext| async move {
                Ok::<_, NoError>(
                    LoopUpdate::default()
                        .log(vec![Rec {
                            step: c.step(),
                            note: name.into(),
                        }])
                        .counter(s.counter + 1),
                )
            }),
        );
    }
    b.edge(START, "parse")
        .edge("parse", "plan")
        .edge("plan", "apply");
    b.route("apply", &["plan", END], |s: &Loop| {
        if s.counter < 5 { "plan" } else { END }
    });
    b.compile().unwrap()
}

#[tokio::test]
async fn breakpoints_stored_with_the_run_stop_it_and_resume_continues() {
    let ex = Executor::new(pipeline(), Arc::new(MemoryStore::new()));
    let run = RunId::new("b");
    let bp = Breakpoints {
        before: vec!["apply".into()],
        after: vec![],
    };
    let out = ex
        .start(
            run.clone(),
            Loop::default(),
            RunOptions {
                breakpoints: bp,
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    assert!(
        matches!(out, crate::RunOutcome::Stopped { reason: StopReason::BeforeNode(ref n), .. } if n == "apply")
    );
    assert_eq!(out.state().counter, 2);
    assert_eq!(
        ex.run_meta(&run).unwrap().breakpoints.before,
        vec!["apply".to_string()]
    );

    // a later call (e.g. another process) sees the stored breakpoint: it stops at the next apply
    let out = ex.resume(&run, RunOptions::default()).await.unwrap();
    assert!(matches!(
        out,
        crate::RunOutcome::Stopped {
            reason: StopReason::BeforeNode(_),
            ..
        }
    ));
    assert_eq!(out.state().counter, 4);

    ex.set_breakpoints(
        &run,
        Breakpoints {
            before: vec![],
            after: vec!["apply".into()],
        },
    )
    .unwrap();
    let out = ex.resume(&run, RunOptions::default()).await.unwrap();
    assert!(
        matches!(out, crate::RunOutcome::Stopped { reason: StopReason::AfterNode(ref n), .. } if n == "apply")
    );
    assert_eq!(out.state().counter, 5);
    ex.set_breakpoints(&run, Breakpoints::default()).unwrap();
    let out = ex.resume(&run, RunOptions::default()).await.unwrap();
    assert!(out.is_finished());
    let notes: Vec<_> = out.state().log.iter().map(|r| r.note.as_str()).collect();
    assert_eq!(notes, vec!["parse", "plan", "apply", "plan", "apply"]);
    let err = ex
        .set_breakpoints(
            &run,
            Breakpoints {
                before: vec!["nope".into()],
                after: vec![],
            },
        )
        .unwrap_err();
    assert!(matches!(err, GraphError::NoSuchNode { .. }));
}

#[tokio::test]
async fn export_highlights_the_path_a_run_took() {
    let ex = Executor::new(pipeline(), Arc::new(MemoryStore::new()));
    let run = RunId::new("x");
    let out = ex
        .start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let path = ex.path(&run, out.checkpoint()).unwrap();
    assert_eq!(path.nodes, vec!["parse", "plan", "apply", crate::END]);
    assert!(path.edges.contains(&("apply".into(), "plan".into())));
    assert!(path.edges.contains(&(crate::START.into(), "parse".into())));
    assert!(path.edges.contains(&("apply".into(), crate::END.into())));

    let plain = ex.graph().to_mermaid(&ExportOptions::default());
    assert!(plain.starts_with("flowchart TD"));
    assert!(plain.contains("n_apply -.->|route| n_plan"));
    assert!(!plain.contains("classDef"));
    let hot = ex.graph().to_mermaid(&ExportOptions {
        highlight: Some(path.clone()),
    });
    assert!(
        hot.contains("class n_parse,n_plan,n_apply,__end__ visited"),
        "{hot}"
    );
    assert!(hot.contains("linkStyle"));

    let dot = ex.graph().to_dot(&ExportOptions {
        highlight: Some(path),
    });
    assert!(dot.starts_with("digraph G {"));
    assert!(
        dot.contains(
            "\"apply\" -> \"plan\" [style=dashed, label=\"route\", color=\"#e08a00\", penwidth=3];"
        ),
        "{dot}"
    );
}

#[tokio::test]
async fn a_route_declared_with_outcomes_is_drawn_with_them_and_routes_the_same() {
    // `apply` until the counter reaches 3, its route declared with outcomes or without
    let counting = |labelled: bool| {
        let mut b = GraphBuilder::<Loop>::new();
        b.node(
            "apply",
            node_fn(|s: Arc<Loop>, _c: NodeContext| async move {
                Ok::<_, NoError>(LoopUpdate::default().counter(s.counter + 1))
            }),
        );
        b.edge(START, "apply");
        let router = |s: &Loop| if s.counter < 3 { "apply" } else { END };
        if labelled {
            b.route_labelled(
                "apply",
                &[("apply", "not yet"), (END, "done \"at last\"")],
                router,
            );
        } else {
            b.route("apply", &["apply", END], router);
        }
        b.compile().unwrap()
    };
    let labelled = counting(true);
    assert_eq!(
        labelled.fingerprint(),
        counting(false).fingerprint(),
        "outcome names are for readers: a run recorded before they were declared still resumes"
    );
    let dot = labelled.to_dot(&ExportOptions::default());
    assert!(
        dot.contains("\"apply\" -> \"apply\" [style=dashed, label=\"not yet\"];"),
        "{dot}"
    );
    assert!(
        dot.contains("\"apply\" -> \"__end__\" [style=dashed, label=\"done \\\"at last\\\"\"];"),
        "{dot}"
    );
    let mermaid = labelled.to_mermaid(&ExportOptions::default());
    assert!(
        mermaid.contains("n_apply -.->|not yet| n_apply"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("n_apply -.->|done 'at last'| __end__"),
        "{mermaid}"
    );
    // the shape a run records to be drawn later: the same nodes and labels as the DOT
    let (nodes, edges) = labelled.outline();
    assert_eq!(nodes, ["__start__", "__end__", "apply"]);
    let edge = |a: &str, b: &str, l: &str| (a.to_string(), b.to_string(), l.to_string());
    assert_eq!(
        edges,
        [
            edge("__start__", "apply", ""),
            edge("apply", "apply", "not yet"),
            edge("apply", "__end__", "done \"at last\"")
        ]
    );
    let ex = Executor::new(labelled, Arc::new(MemoryStore::new()));
    let out = ex
        .start(RunId::new("l"), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(out.state().counter, 3, "the router still picks the target");
}

#[tokio::test]
async fn path_stops_at_an_unfinished_checkpoint() {
    let ex = Executor::new(pipeline(), Arc::new(MemoryStore::new()));
    let run = RunId::new("p");
    let out = ex
        .start(
            run.clone(),
            Loop::default(),
            RunOptions {
                max_steps: Some(2),
                ..RunOptions::default()
            },
        )
        .await
        .unwrap();
    let path = ex.path(&run, out.checkpoint()).unwrap();
    assert_eq!(path.nodes, vec!["parse", "plan"]);
    assert_eq!(
        path.edges,
        vec![
            (crate::START.to_string(), "parse".to_string()),
            ("parse".into(), "plan".into())
        ]
    );
}
