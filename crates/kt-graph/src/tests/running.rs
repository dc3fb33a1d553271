use super::*;
use crate::{
    CancelToken, EventKind, Executor, GraphError, MemoryStore, NoError, RunId, RunOptions,
    SqliteStore, StateRecord,
};
use std::time::Duration;

fn exec(graph: CompiledGraph<Loop>) -> Executor<Loop> {
    Executor::new(graph, Arc::new(MemoryStore::new()))
}

#[tokio::test]
async fn loop_runs_to_end_with_one_checkpoint_per_step() {
    let ex = exec(loop_graph(5, counter()));
    let run = RunId::new("r");
    let out = ex
        .start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    assert!(out.is_finished());
    assert_eq!(out.state().counter, 5);
    assert_eq!(
        out.state().log.iter().map(|r| r.step).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    let history = ex.history(&run).unwrap();
    assert_eq!(history.len(), 6);
    assert_eq!(history.last().unwrap().step, 5);
    assert!(history.last().unwrap().is_finished());
    assert_eq!(ex.state_at(&run, history[3].id).unwrap().counter, 3);
}

#[tokio::test]
async fn checkpoints_store_only_the_changed_fields() {
    let ex = exec(loop_graph(5, counter()));
    let run = RunId::new("r");
    ex.start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let history = ex.history(&run).unwrap();
    // input and the first checkpoint of the call are full; later ones carry the counter and one record
    match &history[3].state {
        StateRecord::Delta(ops) => {
            assert_eq!(ops.len(), 2);
            let json = serde_json::to_string(ops).unwrap();
            assert!(
                json.contains("\"answer 2\"") && !json.contains("answer 1"),
                "{json}"
            );
        }
        other => panic!("expected a delta, got {other:?}"),
    }
}

#[tokio::test]
async fn fan_out_updates_merge_in_index_order_whatever_finishes_first() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "plan",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async { Ok::<_, NoError>(LoopUpdate::default()) }),
    )
    .writes(&[]);
    b.node(
        "cand",
        node_fn(|_s: Arc<Loop>, c: NodeContext| async move {
            // later indices finish first
            tokio::time::sleep(Duration::from_millis(5 * (4 - c.task_index() as u64))).await;
            let note = format!("cand {} of {}", c.task_index(), c.task_count());
            Ok::<_, NoError>(LoopUpdate::default().log(vec![Rec {
                step: c.step(),
                note,
            }]))
        }),
    )
    .writes(&["log"]);
    b.node(
        "pick",
        node_fn(|s: Arc<Loop>, _c: NodeContext| async move {
            Ok::<_, NoError>(LoopUpdate::default().counter(s.log.len() as u64))
        }),
    )
    .writes(&["counter"]);
    b.edge(START, "plan")
        .fan_out("plan", "cand", |_| 4)
        .edge("cand", "pick")
        .edge("pick", END);
    let ex = exec(b.compile().unwrap());
    let out = ex
        .start(RunId::new("f"), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let notes: Vec<_> = out.state().log.iter().map(|r| r.note.as_str()).collect();
    assert_eq!(
        notes,
        vec!["cand 0 of 4", "cand 1 of 4", "cand 2 of 4", "cand 3 of 4"]
    );
    assert_eq!(out.state().counter, 4, "pick ran once, after the barrier");
    assert_eq!(ex.history(&RunId::new("f")).unwrap().len(), 4);
}

#[tokio::test]
async fn router_returning_an_undeclared_target_fails_with_node_and_target() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "a",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async { Ok::<_, NoError>(LoopUpdate::default()) }),
    );
    b.node(
        "b",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async { Ok::<_, NoError>(LoopUpdate::default()) }),
    );
    b.edge(START, "a")
        .route("a", &["b", END], |_| "c")
        .edge("b", END);
    let ex = exec(b.compile().unwrap());
    let err = ex
        .start(RunId::new("r"), Loop::default(), RunOptions::default())
        .await
        .unwrap_err();
    match err {
        GraphError::UndeclaredTarget {
            node,
            target,
            declared,
        } => {
            assert_eq!((node.as_str(), target.as_str()), ("a", "c"));
            assert_eq!(declared, vec!["b".to_string(), END.to_string()]);
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn writing_an_undeclared_field_fails_the_step() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "a",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async {
            Ok::<_, NoError>(LoopUpdate::default().counter(1))
        }),
    )
    .writes(&["log"]);
    b.edge(START, "a").edge("a", END);
    let err = exec(b.compile().unwrap())
        .start(RunId::new("r"), Loop::default(), RunOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, GraphError::UndeclaredWrite { node, field } if node == "a" && field == "counter")
    );
}

#[tokio::test]
async fn step_limit_stops_an_endless_loop() {
    let ex = exec(loop_graph(u64::MAX, counter()));
    let opts = RunOptions {
        step_limit: 7,
        ..RunOptions::default()
    };
    let err = ex
        .start(RunId::new("r"), Loop::default(), opts)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GraphError::StepLimit { limit: 7, .. }),
        "{err}"
    );
    assert_eq!(
        ex.state_at(&RunId::new("r"), ex.latest(&RunId::new("r")).unwrap())
            .unwrap()
            .counter,
        7
    );
}

#[tokio::test]
async fn cancelling_drops_the_running_step_and_resume_continues() {
    let started = Arc::new(tokio::sync::Notify::new());
    let hang = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (s2, h2) = (started.clone(), hang.clone());
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "slow",
        node_fn(move |s: Arc<Loop>, _c: NodeContext| {
            let (started, hang) = (s2.clone(), h2.clone());
            async move {
                if s.counter == 2 && hang.load(Ordering::SeqCst) {
                    started.notify_one();
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                Ok::<_, NoError>(LoopUpdate::default().counter(s.counter + 1))
            }
        }),
    );
    b.edge(START, "slow")
        .route("slow", &["slow", END], |s: &Loop| {
            if s.counter < 4 { "slow" } else { END }
        });
    let ex = exec(b.compile().unwrap());
    let token = CancelToken::new();
    let t2 = token.clone();
    tokio::spawn(async move {
        started.notified().await;
        t2.cancel();
    });
    let run = RunId::new("c");
    let opts = RunOptions {
        cancel: token,
        ..RunOptions::default()
    };
    let t0 = std::time::Instant::now();
    let err = ex
        .start(run.clone(), Loop::default(), opts)
        .await
        .unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "cancel did not interrupt the sleeping node"
    );
    assert!(
        matches!(err, GraphError::Cancelled { checkpoint, .. } if checkpoint.0 == 2),
        "{err}"
    );
    assert_eq!(
        ex.history(&run).unwrap().len(),
        3,
        "the cancelled step left nothing behind"
    );
    hang.store(false, Ordering::SeqCst);
    let out = ex.resume(&run, RunOptions::default()).await.unwrap();
    assert_eq!(out.state().counter, 4);
}

#[tokio::test]
async fn events_report_steps_nodes_checkpoints_and_failures() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "a",
        node_fn(|_s: Arc<Loop>, c: NodeContext| async move {
            c.emit("progress", serde_json::json!({"pct": 50}));
            Ok::<_, NoError>(LoopUpdate::default().counter(1))
        }),
    );
    b.node(
        "b",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async { Err::<LoopUpdate, _>(TestError::Fatal) }),
    );
    b.edge(START, "a").edge("a", "b").edge("b", END);
    let ex = exec(b.compile().unwrap());
    let mut rx = ex.subscribe();
    assert!(
        ex.start(RunId::new("e"), Loop::default(), RunOptions::default())
            .await
            .is_err()
    );
    let mut kinds = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        kinds.push(ev.kind);
    }
    let has = |f: &dyn Fn(&EventKind) -> bool| kinds.iter().any(f);
    assert!(has(&|k| matches!(k, EventKind::RunStarted { .. })));
    assert!(has(&|k| matches!(k, EventKind::StepStarted { .. })));
    assert!(has(
        &|k| matches!(k, EventKind::NodeFinished { node, .. } if node == "a")
    ));
    assert!(has(
        &|k| matches!(k, EventKind::StateMerged { fields } if fields == &vec!["counter"])
    ));
    assert!(has(&|k| matches!(k, EventKind::CheckpointSaved { .. })));
    assert!(has(
        &|k| matches!(k, EventKind::Custom { name, .. } if name == "progress")
    ));
    assert!(has(
        &|k| matches!(k, EventKind::NodeFailed { node, will_retry: false, .. } if node == "b")
    ));
    assert!(has(
        &|k| matches!(k, EventKind::RunFailed { error } if error.contains("fatal failure"))
    ));
}

crate::state! {
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    struct Inner => InnerUpdate { #[overwrite] n: u64 }
}

#[tokio::test]
async fn subgraph_runs_as_a_node_with_its_own_state() {
    let mut inner = GraphBuilder::<Inner>::new();
    inner.node(
        "double",
        node_fn(|s: Arc<Inner>, _c: NodeContext| async move {
            Ok::<_, NoError>(InnerUpdate::default().n(s.n * 2))
        }),
    );
    inner
        .edge(START, "double")
        .route("double", &["double", END], |s: &Inner| {
            if s.n < 40 { "double" } else { END }
        });
    let inner = inner.compile().unwrap();

    let mut b = GraphBuilder::<Loop>::new();
    b.subgraph(
        "grow",
        inner,
        |s: &Loop| Inner {
            n: s.counter.max(1),
        },
        |i: Inner| LoopUpdate::default().counter(i.n),
    )
    .writes(&["counter"]);
    b.edge(START, "grow").edge("grow", END);
    let out = exec(b.compile().unwrap())
        .start(
            RunId::new("s"),
            Loop {
                counter: 3,
                log: vec![],
            },
            RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.state().counter, 48);
}

#[tokio::test]
async fn sqlite_backed_run_matches_the_in_memory_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("run.sqlite")).unwrap());
    let ex = Executor::new(loop_graph(300, counter()), store);
    let run = RunId::new("sql");
    let out = ex
        .start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let mem = exec(loop_graph(300, counter()))
        .start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(out.state(), mem.state());
    // folding across a full snapshot boundary gives the same state as the run had
    let h = ex.history(&run).unwrap();
    for cp in [&h[1], &h[130], &h[257], &h[300]] {
        assert_eq!(ex.state_at(&run, cp.id).unwrap().counter, cp.step);
    }
}
