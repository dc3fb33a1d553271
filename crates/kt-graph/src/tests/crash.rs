//! Kill the process for real between steps (and inside a parallel step), then resume from the SQLite file.
//!
//! The test re-executes its own binary with `KT_GRAPH_CRASH_DB` set; in that child a worker aborts the
//! process at step `CRASH_STEP` after its sibling tasks have finished and saved their writes.

use super::*;
use crate::{CheckpointStore, Executor, MemoryStore, NoError, RunId, RunOptions, SqliteStore};
use std::process::Command;
use std::time::Duration;

const CRASH_STEP: u64 = 9;
const ENV_DB: &str = "KT_GRAPH_CRASH_DB";

/// tick (counter += 1) → spread → 3 × work (append) → tick ... until counter == 6; 18 supersteps.
fn crash_graph(work_calls_at_crash_step: Arc<AtomicUsize>) -> CompiledGraph<Loop> {
    let mut b = GraphBuilder::<Loop>::new();
    b.node(
        "tick",
        node_fn(|s: Arc<Loop>, _c: NodeContext| async move {
            Ok::<_, NoError>(LoopUpdate::default().counter(s.counter + 1))
        }),
    )
    .writes(&["counter"]);
    b.node(
        "spread",
        node_fn(|_s: Arc<Loop>, _c: NodeContext| async { Ok::<_, NoError>(LoopUpdate::default()) }),
    )
    .writes(&[]);
    b.node(
        "work",
        node_fn(move |s: Arc<Loop>, c: NodeContext| {
            let calls = work_calls_at_crash_step.clone();
            async move {
                if c.step() == CRASH_STEP {
                    calls.fetch_add(1, Ordering::SeqCst);
                    if c.task_index() == 1 && std::env::var_os(ENV_DB).is_some() {
                        // let the siblings finish and save their writes first
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        std::process::abort();
                    }
                }
                let note = format!("w{}@{}", c.task_index(), s.counter);
                Ok::<_, NoError>(LoopUpdate::default().log(vec![Rec {
                    step: c.step(),
                    note,
                }]))
            }
        }),
    )
    .writes(&["log"]);
    b.edge(START, "tick");
    b.route("tick", &["spread", END], |s: &Loop| {
        if s.counter < 6 { "spread" } else { END }
    });
    b.fan_out("spread", "work", |_| 3).edge("work", "tick");
    b.compile().unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn resume_after_kill_reaches_the_same_final_state() {
    if let Some(db) = std::env::var_os(ENV_DB) {
        // child: run until the worker aborts the process
        let store = Arc::new(SqliteStore::open(db).unwrap());
        let ex = Executor::new(crash_graph(counter()), store);
        let result = runtime().block_on(ex.start(
            RunId::new("crash"),
            Loop::default(),
            RunOptions::default(),
        ));
        panic!("the child should have been killed, but the run ended with {result:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.sqlite");
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::crash::resume_after_kill_reaches_the_same_final_state",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ENV_DB, &db)
        .status()
        .unwrap();
    assert!(!status.success(), "the child must die");

    let store = Arc::new(SqliteStore::open(&db).unwrap());
    let run = RunId::new("crash");
    let latest = store.latest_checkpoint(&run).unwrap().unwrap();
    assert_eq!(
        store.get_checkpoint(&run, latest).unwrap().unwrap().step,
        CRASH_STEP - 1,
        "killed inside step {CRASH_STEP}"
    );
    assert_eq!(
        store.task_writes(&run, latest).unwrap().len(),
        2,
        "the two siblings saved their writes"
    );

    let calls = counter();
    let ex = Executor::new(crash_graph(calls.clone()), store);
    let resumed = runtime()
        .block_on(ex.resume(&run, RunOptions::default()))
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "only the killed task ran again"
    );

    let reference = runtime()
        .block_on(
            Executor::new(crash_graph(counter()), Arc::new(MemoryStore::new())).start(
                run.clone(),
                Loop::default(),
                RunOptions::default(),
            ),
        )
        .unwrap();
    assert!(resumed.is_finished());
    assert_eq!(resumed.state(), reference.state());
    assert_eq!(resumed.state().log.len(), 5 * 3);
}
