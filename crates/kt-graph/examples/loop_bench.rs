//! Benchmark: a loop graph of N steps (default 1000); each step overwrites a counter and appends a small
//! record; checkpointed to an SQLite file on disk. Prints time per step and bytes on disk.
//!
//! `cargo run --release -p kt-graph --example loop_bench -- [steps] [db-path | memory]`
//! (`memory` uses the in-memory store, to separate the engine's own cost from SQLite's).
//! The comparison with LangGraph lives in experiments/graph-bench/run.sh.

use kt_graph::{
    CheckpointStore, END, Executor, GraphBuilder, MemoryStore, NoError, NodeContext, RunId,
    RunOptions, START, SqliteStore, node_fn,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

const REPEATS: usize = 5;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    step: u64,
    msg: String,
}

kt_graph::state! {
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    struct Bench => BenchUpdate {
        #[overwrite] counter: u64,
        #[append] log: Vec<Record>,
    }
}

fn disk_bytes(db: &std::path::Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", db.display())).ok())
        .map(|m| m.len())
        .sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let steps: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let dir = tempfile::tempdir()?;
    let target = args.next();
    let in_memory = target.as_deref() == Some("memory");
    let db = target
        .filter(|_| !in_memory)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("bench.sqlite"));
    let _ = std::fs::remove_file(&db);

    let mut b = GraphBuilder::<Bench>::new();
    b.node(
        "tick",
        node_fn(|s: Arc<Bench>, _ctx: NodeContext| async move {
            let record = Record {
                step: s.counter,
                msg: format!("record {}", s.counter),
            };
            Ok::<_, NoError>(
                BenchUpdate::default()
                    .counter(s.counter + 1)
                    .log(vec![record]),
            )
        }),
    )
    .writes(&["counter", "log"]);
    b.edge(START, "tick");
    b.route("tick", &["tick", END], move |s: &Bench| {
        if s.counter < steps { "tick" } else { END }
    });
    let graph = b.compile()?;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Several runs, each on a fresh file, and the median: a shared 2-core box is noisy.
    let mut per_step_ms = Vec::new();
    let mut bytes = 0;
    for _ in 0..REPEATS {
        let _ = std::fs::remove_file(&db);
        let store: Arc<dyn CheckpointStore> = if in_memory {
            Arc::new(MemoryStore::new())
        } else {
            Arc::new(SqliteStore::open(&db)?)
        };
        let exec = Executor::new(graph.clone(), store);
        let opts = RunOptions {
            step_limit: steps + 10,
            ..RunOptions::default()
        };
        let t0 = Instant::now();
        let out = rt.block_on(exec.start(RunId::new("bench"), Bench::default(), opts))?;
        // Closing is timed too: SQLite folds the WAL into the main file (with an fsync) on close.
        drop(exec);
        let elapsed = t0.elapsed();
        assert_eq!(out.state().log.len() as u64, steps);
        per_step_ms.push(elapsed.as_secs_f64() * 1e3 / steps as f64);
        bytes = disk_bytes(&db);
    }
    let all: Vec<String> = per_step_ms.iter().map(|m| format!("{m:.5}")).collect();
    per_step_ms.sort_by(f64::total_cmp);
    println!("steps: {steps}");
    println!("runs_ms_per_step: {}", all.join(","));
    println!("ms_per_step: {:.5}", per_step_ms[per_step_ms.len() / 2]);
    if !in_memory {
        println!("bytes_on_disk: {bytes}");
    }
    Ok(())
}
