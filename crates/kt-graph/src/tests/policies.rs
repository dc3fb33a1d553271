use super::*;
use crate::{EventKind, Executor, GraphError, MemoryStore, NoError, Retry, RunId, RunOptions};
use std::time::Duration;

fn fast<E>(attempts: u32) -> Retry<Loop, E> {
    Retry::up_to(attempts).backoff(Duration::from_millis(1), 2.0, Duration::from_millis(5))
}

/// Fails with a compile error until the state carries the previous error's log (which only the
/// before-retry handler adds), then succeeds.
fn compiler_node(calls: Arc<AtomicUsize>) -> impl crate::Node<Loop, Error = TestError> {
    node_fn(move |s: Arc<Loop>, _c: NodeContext| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            if s.log.iter().any(|r| r.note.starts_with("fix:")) {
                Ok(LoopUpdate::default().counter(1))
            } else {
                Err(TestError::Compile("line 3: missing ;".into()))
            }
        }
    })
}

#[tokio::test]
async fn retry_handler_edits_the_state_the_next_attempt_sees() {
    let calls = counter();
    let mut b = GraphBuilder::<Loop>::new();
    b.node("apply", compiler_node(calls.clone()))
        .retry(fast(3).before_retry(
            |e| matches!(e, TestError::Compile(_)),
            |e, s: &mut Loop| {
                s.log.push(Rec {
                    step: 0,
                    note: format!("fix: {e}"),
                })
            },
        ))
        .writes(&["counter"]);
    b.edge(START, "apply").edge("apply", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let mut rx = ex.subscribe();
    let out = ex
        .start(RunId::new("r"), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(out.state().counter, 1);
    assert!(
        out.state().log.is_empty(),
        "the handler's edit is local to the attempts"
    );
    let h = ex.history(&RunId::new("r")).unwrap();
    assert_eq!(h[1].timings[0].attempts, 2);
    let mut retried = false;
    while let Ok(ev) = rx.try_recv() {
        retried |= matches!(
            ev.kind,
            EventKind::NodeRetrying {
                next_attempt: 2,
                ..
            }
        );
    }
    assert!(retried);
}

#[tokio::test]
async fn errors_the_predicate_rejects_are_not_retried() {
    let calls = counter();
    let c2 = calls.clone();
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "a",
        node_fn(move |_s: Arc<Loop>, _c: NodeContext| {
            let c = c2.clone();
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                Err::<LoopUpdate, _>(TestError::Fatal)
            }
        }),
    )
    .retry(fast(5).retry_if(|e| matches!(e, TestError::Transient)));
    b.edge(START, "a").edge("a", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let err = ex
        .start(RunId::new("r"), Loop::default(), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    match err {
        GraphError::NodeFailed {
            node,
            attempts,
            message,
            step,
            ..
        } => {
            assert_eq!((node.as_str(), attempts, step), ("a", 1, 1));
            assert!(message.contains("fatal"));
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn a_failed_node_keeps_its_typed_error_through_the_engine_and_a_subgraph() {
    let failing = || {
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async move {
            Err::<LoopUpdate, _>(TestError::Compile("line 3".into()))
        })
    };
    let mut inner = GraphBuilder::<Loop>::new();
    inner.node("a", failing());
    inner.edge(START, "a").edge("a", END);
    let mut outer = GraphBuilder::<Loop>::new();
    outer.subgraph(
        "sub",
        inner.compile().unwrap(),
        |s: &Loop| s.clone(),
        |_| LoopUpdate::default(),
    );
    outer.edge(START, "sub").edge("sub", END);
    let ex = Executor::new(outer.compile().unwrap(), Arc::new(MemoryStore::new()));
    let err = ex
        .start(RunId::new("r"), Loop::default(), RunOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err.node_error::<TestError>(), Some(TestError::Compile(log)) if log == "line 3"),
        "{err}"
    );
    assert!(err.node_error::<std::io::Error>().is_none());
}

#[tokio::test]
async fn exhausted_retries_take_the_on_error_route_and_are_recorded() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "flaky",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async {
            Err::<LoopUpdate, _>(TestError::Transient)
        }),
    )
    .retry(fast(3))
    .on_exhausted("fallback");
    b.node(
        "fallback",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async {
            Ok::<_, NoError>(LoopUpdate::default().counter(99))
        }),
    );
    b.edge(START, "flaky")
        .edge("flaky", END)
        .edge("fallback", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let out = ex
        .start(RunId::new("r"), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(out.state().counter, 99);
    let h = ex.history(&RunId::new("r")).unwrap();
    assert_eq!(h[1].failures.len(), 1);
    assert_eq!(h[1].failures[0].routed_to, "fallback");
    assert_eq!(h[1].timings[0].attempts, 3);
    assert!(
        ex.graph()
            .to_mermaid(&Default::default())
            .contains("on error")
    );
}

#[tokio::test]
async fn timeout_applies_per_attempt_and_a_fast_retry_succeeds() {
    let calls = counter();
    let c2 = calls.clone();
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "hang_once",
        node_fn(move |_s: Arc<Loop>, _c: NodeContext| {
            let c = c2.clone();
            async move {
                if c.fetch_add(1, Ordering::SeqCst) == 0 {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                Ok::<_, NoError>(LoopUpdate::default().counter(7))
            }
        }),
    )
    .retry(fast(2))
    .timeout(Duration::from_millis(300));
    b.edge(START, "hang_once").edge("hang_once", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let out = ex
        .start(RunId::new("r"), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!((out.state().counter, calls.load(Ordering::SeqCst)), (7, 2));
}

#[tokio::test]
async fn timeout_without_retry_fails_naming_the_limit() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "hang",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, NoError>(LoopUpdate::default())
        }),
    )
    .timeout(Duration::from_millis(20));
    b.edge(START, "hang").edge("hang", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let err = ex
        .start(RunId::new("r"), Loop::default(), RunOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out after 20ms"), "{err}");
}

#[tokio::test]
async fn failed_parallel_task_is_the_only_one_rerun_on_resume() {
    let runs_per_index: Arc<Vec<AtomicUsize>> =
        Arc::new((0..3).map(|_| AtomicUsize::new(0)).collect());
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (r2, f2) = (runs_per_index.clone(), fail.clone());
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "plan",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async { Ok::<_, NoError>(LoopUpdate::default()) }),
    )
    .writes(&[]);
    b.node(
        "cand",
        node_fn(move |_s: Arc<Loop>, c: NodeContext| {
            let (r, f) = (r2.clone(), f2.clone());
            async move {
                r[c.task_index()].fetch_add(1, Ordering::SeqCst);
                if c.task_index() == 1 && f.load(Ordering::SeqCst) {
                    return Err(TestError::Transient);
                }
                Ok(LoopUpdate::default().log(vec![Rec {
                    step: c.step(),
                    note: format!("c{}", c.task_index()),
                }]))
            }
        }),
    )
    .writes(&["log"]);
    b.edge(START, "plan")
        .fan_out("plan", "cand", |_| 3)
        .edge("cand", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let run = RunId::new("p");
    let err = ex
        .start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::NodeFailed { ref node, .. } if node == "cand"));
    fail.store(false, Ordering::SeqCst);
    let out = ex.resume(&run, RunOptions::default()).await.unwrap();
    let counts: Vec<usize> = runs_per_index
        .iter()
        .map(|c| c.load(Ordering::SeqCst))
        .collect();
    assert_eq!(counts, vec![1, 2, 1], "only the failed task ran again");
    let notes: Vec<_> = out.state().log.iter().map(|r| r.note.as_str()).collect();
    assert_eq!(notes, vec!["c0", "c1", "c2"]);
}

#[tokio::test]
async fn a_rerun_node_reuses_effects_it_paid_for_before_failing() {
    let paid = counter();
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (p2, f2) = (paid.clone(), fail.clone());
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "tune",
        node_fn(move |_s: Arc<Loop>, c: NodeContext| {
            let (paid, fail) = (p2.clone(), f2.clone());
            async move {
                let best: u64 = c
                    .effect_keyed("tuning_job", "matmul", || async {
                        paid.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, TestError>(17)
                    })
                    .await
                    .map_err(|e| TestError::Effect(e.to_string()))?;
                if fail.load(Ordering::SeqCst) {
                    return Err(TestError::Fatal);
                }
                Ok(LoopUpdate::default().counter(best))
            }
        }),
    );
    b.edge(START, "tune").edge("tune", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let run = RunId::new("r");
    assert!(
        ex.start(run.clone(), Loop::default(), RunOptions::default())
            .await
            .is_err()
    );
    fail.store(false, Ordering::SeqCst);
    let out = ex.resume(&run, RunOptions::default()).await.unwrap();
    assert_eq!(out.state().counter, 17);
    assert_eq!(paid.load(Ordering::SeqCst), 1, "the tuning job ran once");
}

fn keep_max(old: &mut u64, new: u64) {
    *old = (*old).max(new);
}

crate::state! {
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    struct Best => BestUpdate { #[custom(keep_max)] best: u64, #[append] seen: Vec<u64> }
}

#[tokio::test]
async fn custom_merge_combines_parallel_writers_and_checkpoints_the_result() {
    let mut b = GraphBuilder::<Best>::new();
    b.node(
        "plan",
        node_fn(|_s: Arc<Best>, _c: NodeContext| async { Ok::<_, NoError>(BestUpdate::default()) }),
    )
    .writes(&[]);
    b.node(
        "cand",
        node_fn(|_s: Arc<Best>, c: NodeContext| async move {
            let score = [5u64, 42, 7][c.task_index()];
            Ok::<_, NoError>(BestUpdate::default().best(score).seen(vec![score]))
        }),
    )
    .writes(&["best", "seen"]);
    b.edge(START, "plan")
        .fan_out("plan", "cand", |_| 3)
        .edge("cand", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let run = RunId::new("b");
    let out = ex
        .start(run.clone(), Best::default(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(out.state().best, 42);
    assert_eq!(out.state().seen, vec![5, 42, 7]);
    assert_eq!(ex.state_at(&run, out.checkpoint()).unwrap(), *out.state());
}

#[tokio::test]
async fn a_panicking_node_fails_its_task_and_can_take_the_error_route() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "boom",
        node_fn(|s: Arc<Loop>, _c: NodeContext| async move {
            if s.counter == 0 {
                panic!("index out of range in candidate 3");
            }
            Ok::<_, NoError>(LoopUpdate::default())
        }),
    )
    .on_exhausted("recover");
    b.node(
        "recover",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async {
            Ok::<_, NoError>(LoopUpdate::default().counter(1))
        }),
    );
    b.edge(START, "boom").edge("boom", END).edge("recover", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let out = ex
        .start(RunId::new("p"), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(out.state().counter, 1);
    let h = ex.history(&RunId::new("p")).unwrap();
    assert!(
        h[1].failures[0]
            .message
            .contains("panicked: index out of range in candidate 3"),
        "{:?}",
        h[1].failures
    );
}
