use super::*;
use crate::{
    CheckpointId, CheckpointSource, CheckpointStore, Executor, GraphError, MemoryStore, Migration,
    ReplayMode, RunId, RunNodeOptions, RunOptions, StopReason,
};

fn setup(limit: u64) -> (Executor<Loop>, Arc<AtomicUsize>, Arc<MemoryStore>) {
    let effects = counter();
    let store = Arc::new(MemoryStore::new());
    (
        Executor::new(loop_graph(limit, effects.clone()), store.clone()),
        effects,
        store,
    )
}

#[tokio::test]
async fn replay_from_step_k_reproduces_the_rest_and_pays_no_effect_twice() {
    let (ex, effects, store) = setup(10);
    let run = RunId::new("r");
    let first = ex
        .start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(effects.load(Ordering::SeqCst), 10);
    let k = ex
        .history(&run)
        .unwrap()
        .iter()
        .find(|c| c.step == 4)
        .unwrap()
        .id;
    let replayed = ex.replay(&run, k, RunOptions::default()).await.unwrap();
    assert_eq!(replayed.state(), first.state(), "steps 5..10 reproduced");
    assert_eq!(
        effects.load(Ordering::SeqCst),
        10,
        "every effect came from the journal"
    );
    // history was extended on a new branch, never overwritten
    let h = ex.history(&run).unwrap();
    assert_eq!(h.len(), 11 + 1 + 6);
    assert!(h[..11].iter().all(|c| c.branch.0 == 0));
    assert!(h[11..].iter().all(|c| c.branch.0 == 1));
    assert_eq!(h[11].source, CheckpointSource::Fork);
    assert_eq!(h[11].parent, Some(k));
    let line: Vec<u64> = ex
        .lineage(&run, replayed.checkpoint())
        .unwrap()
        .iter()
        .map(|c| c.step)
        .collect();
    assert_eq!(
        line,
        vec![0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 9, 10],
        "input, steps 1..4, the copy, steps 5..10"
    );
    // a replay of the replay still finds the journal (copied into branch 1)
    let again = ex
        .replay(&run, h[13].id, RunOptions::default())
        .await
        .unwrap();
    assert_eq!(again.state(), first.state());
    assert_eq!(effects.load(Ordering::SeqCst), 10);
    assert!(store.count_effects(&run).unwrap() >= 10);
}

#[tokio::test]
async fn live_replay_pays_for_effects_again() {
    let (ex, effects, _) = setup(6);
    let run = RunId::new("r");
    ex.start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let k = ex.history(&run).unwrap()[2].id;
    let opts = RunOptions {
        effects: ReplayMode::Live,
        ..RunOptions::default()
    };
    ex.replay(&run, k, opts).await.unwrap();
    assert_eq!(effects.load(Ordering::SeqCst), 6 + 4);
}

#[tokio::test]
async fn fork_with_an_edited_state_continues_on_a_new_branch() {
    let (ex, effects, _) = setup(10);
    let run = RunId::new("r");
    let original = ex
        .start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let at = ex.history(&run).unwrap()[3].id;
    let fork = ex.fork(&run, at, |s| s.counter = 8).unwrap();
    assert_eq!(ex.state_at(&run, fork).unwrap().counter, 8);
    let out = ex.resume(&run, RunOptions::default()).await.unwrap();
    assert_eq!(out.state().counter, 10);
    assert_eq!(out.state().log.len(), 3 + 2);
    assert_eq!(
        effects.load(Ordering::SeqCst),
        10 + 2,
        "a fork does not reuse the origin's effects"
    );
    assert_eq!(
        ex.state_at(&run, original.checkpoint()).unwrap(),
        *original.state(),
        "the original is untouched"
    );
}

#[tokio::test]
async fn run_node_leaves_history_untouched_unless_asked() {
    let (ex, effects, store) = setup(5);
    let run = RunId::new("r");
    ex.start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let before = ex.history(&run).unwrap();
    let journal_before = store.count_effects(&run).unwrap();
    let at = before[2].id;
    let result = ex
        .run_node(&run, at, "tick", RunNodeOptions::default())
        .await
        .unwrap();
    assert_eq!(result.state.counter, 3);
    assert_eq!(result.update[0].0, "counter");
    assert!(result.checkpoint.is_none());
    assert_eq!(ex.history(&run).unwrap(), before, "no checkpoint written");
    assert_eq!(
        store.count_effects(&run).unwrap(),
        journal_before,
        "nothing journaled"
    );
    assert_eq!(
        effects.load(Ordering::SeqCst),
        6,
        "the default is a live call"
    );

    let reused = ex
        .run_node(
            &run,
            at,
            "tick",
            RunNodeOptions {
                effects: ReplayMode::Reuse,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        effects.load(Ordering::SeqCst),
        6,
        "reuse takes the journaled answer"
    );
    assert_eq!(reused.state.log.last().unwrap().note, "answer 2");

    let written = ex
        .run_node(
            &run,
            at,
            "tick",
            RunNodeOptions {
                write: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let id = written.checkpoint.unwrap();
    let cp = ex.checkpoint(&run, id).unwrap();
    assert_eq!(
        (cp.source, cp.parent, cp.branch.0),
        (CheckpointSource::RunNode, Some(at), 1)
    );
    assert_eq!(cp.next[0].node, "tick");
    assert_eq!(ex.history(&run).unwrap().len(), before.len() + 1);
}

#[tokio::test]
async fn step_runs_one_superstep_at_a_time() {
    let (ex, _, _) = setup(3);
    let run = RunId::new("r");
    let opts = RunOptions {
        max_steps: Some(0),
        ..RunOptions::default()
    };
    let out = ex.start(run.clone(), Loop::default(), opts).await.unwrap();
    assert!(matches!(out, crate::RunOutcome::Paused { .. }));
    for expected in 1..=3 {
        let out = ex.step(&run, RunOptions::default()).await.unwrap();
        assert_eq!(out.state().counter, expected);
    }
    assert!(
        ex.step(&run, RunOptions::default())
            .await
            .unwrap()
            .is_finished()
    );
}

#[tokio::test]
async fn diff_names_the_fields_that_changed() {
    let (ex, _, _) = setup(4);
    let run = RunId::new("r");
    ex.start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let h = ex.history(&run).unwrap();
    let d = ex.diff(&run, h[1].id, h[3].id).unwrap();
    assert_eq!(
        d.iter().map(|f| f.field.as_str()).collect::<Vec<_>>(),
        vec!["counter", "log"]
    );
    assert_eq!(d[0].before, Some(serde_json::json!(1)));
    assert_eq!(d[0].after, Some(serde_json::json!(3)));
    assert!(ex.diff(&run, h[2].id, h[2].id).unwrap().is_empty());
}

#[tokio::test]
async fn node_interrupt_stops_the_run_and_resume_with_injects_the_answer() {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "ask",
        node_fn(|s: Arc<Loop>, c: NodeContext| async move {
            let answer = c.interrupt(serde_json::json!({"question": "how many?"}))?;
            let n = answer.as_u64().unwrap_or(0);
            Ok::<_, TestError>(LoopUpdate::default().counter(s.counter + n))
        }),
    );
    b.edge(START, "ask").edge("ask", END);
    let ex = Executor::new(b.compile().unwrap(), Arc::new(MemoryStore::new()));
    let run = RunId::new("i");
    let out = ex
        .start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    match &out {
        crate::RunOutcome::Stopped {
            reason: StopReason::Interrupt { node, payload },
            ..
        } => {
            assert_eq!(node, "ask");
            assert_eq!(payload["question"], "how many?");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        ex.run_meta(&run).unwrap().stopped.is_some(),
        "the stop is stored with the run"
    );
    let done = ex
        .resume_with(&run, 42, RunOptions::default())
        .await
        .unwrap();
    assert!(done.is_finished());
    assert_eq!(done.state().counter, 42);
}

crate::state! {
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    struct Renamed => RenamedUpdate { #[overwrite] count: u64, #[append] log: Vec<Rec> }
}

#[tokio::test]
async fn changed_graph_is_refused_unless_a_migration_is_given() {
    let (ex, _, store) = setup(3);
    let run = RunId::new("r");
    ex.start(
        run.clone(),
        Loop::default(),
        RunOptions {
            max_steps: Some(1),
            ..RunOptions::default()
        },
    )
    .await
    .unwrap();
    let old_fp = ex.graph().fingerprint().to_string();

    let mut b = GraphBuilder::<Renamed>::new();
    b.node(
        "tick",
        node_fn(|s: Arc<Renamed>, _c: NodeContext| async move {
            Ok::<_, crate::NoError>(RenamedUpdate::default().count(s.count + 1))
        }),
    );
    b.edge(START, "tick")
        .route("tick", &["tick", END], |s: &Renamed| {
            if s.count < 3 { "tick" } else { END }
        });
    let new_graph = b.compile().unwrap();
    let store_dyn: Arc<dyn CheckpointStore> = store;
    let refused = Executor::new(new_graph.clone(), store_dyn.clone());
    let err = refused
        .resume(&run, RunOptions::default())
        .await
        .unwrap_err();
    match &err {
        GraphError::FingerprintMismatch {
            run: r,
            checkpoint,
            stored,
            ..
        } => {
            assert_eq!(
                (r.as_str(), *checkpoint, stored.as_str()),
                ("r", CheckpointId(1), old_fp.as_str())
            );
        }
        other => panic!("{other}"),
    }
    let migrated =
        Executor::new(new_graph, store_dyn).with_migration(Migration::new(old_fp, |fields| {
            let v = fields.remove("counter").ok_or("no counter field")?;
            fields.insert("count".into(), v);
            Ok(())
        }));
    let out = migrated.resume(&run, RunOptions::default()).await.unwrap();
    assert_eq!(out.state().count, 3);
}

#[tokio::test]
async fn missing_checkpoint_and_undecodable_state_are_typed_errors() {
    let (ex, _, store) = setup(2);
    let run = RunId::new("r");
    ex.start(run.clone(), Loop::default(), RunOptions::default())
        .await
        .unwrap();
    let err = ex.state_at(&run, CheckpointId(999)).unwrap_err();
    assert!(
        matches!(
            err,
            GraphError::CheckpointNotFound {
                checkpoint: CheckpointId(999),
                ..
            }
        ),
        "{err}"
    );
    let err = ex
        .replay(&RunId::new("nope"), CheckpointId(0), RunOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::RunNotFound { .. }), "{err}");

    // write a checkpoint whose counter is a string: the state no longer deserializes
    let mut bad = ex.checkpoint(&run, CheckpointId(2)).unwrap();
    bad.id = CheckpointId(3);
    bad.parent = Some(CheckpointId(2));
    bad.state = crate::StateRecord::Delta(vec![crate::FieldOp::Set(
        "counter".into(),
        serde_json::json!("x"),
    )]);
    store.put_checkpoint(&run, &bad).unwrap();
    let err = ex.state_at(&run, CheckpointId(3)).unwrap_err();
    match &err {
        GraphError::StateDecode {
            run: r, checkpoint, ..
        } => assert_eq!((r.as_str(), *checkpoint), ("r", CheckpointId(3))),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("checkpoint #3"), "{err}");
    assert_eq!(
        ex.state_at(&run, CheckpointId(2)).unwrap().counter,
        2,
        "the rest is intact"
    );
}
