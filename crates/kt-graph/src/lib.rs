//! kt-graph: a typed state-graph engine with checkpoints, time travel and per-node debugging.
//!
//! It runs every stage and strategy of kt, but knows nothing of CUDA, LLMs or kt's domain: a graph is
//! nodes (async functions from a typed state to a typed partial update) joined by fixed edges, routes with
//! declared targets and fan-outs, executed in supersteps. After every superstep the engine stores a
//! checkpoint (per-field deltas) in a [`CheckpointStore`] — [`MemoryStore`] for tests, [`SqliteStore`] for
//! real runs — so a run can be resumed after a crash, replayed from any checkpoint on a new branch (with
//! recorded side effects reused instead of paid again), forked with an edited state, stepped, stopped at
//! breakpoints, and one node can be re-run against any saved state. It deliberately does not provide a
//! CLI, persistence of anything but its own runs, or distributed execution: one process drives one run.
//!
//! Main types, in reading order:
//! - [`state!`] (`state.rs`) declares the state struct, its `Update` struct and the merge rule of every
//!   field.
//! - [`GraphBuilder`] (`builder.rs`, over the vocabulary of `decl.rs`: [`START`], [`END`], edges, routes,
//!   fan-outs) → `.node(..)` (with `.retry(..)`, `.timeout(..)`, `.on_exhausted(..)`, `.writes(..)`),
//!   `.edge(..)`, `.route(..)`, `.fan_out(..)`, `.subgraph(..)` → `.compile()` → [`CompiledGraph`]
//!   (`graph.rs`: the checks and the routing rules; `export.rs`: mermaid/DOT).
//! - [`Executor`] (`executor/`) runs it. The run loop (`run.rs`: `start`, `resume`, `resume_with`, `step`)
//!   drives supersteps (`superstep.rs`, folding updates in `merge.rs`); the read side over stored
//!   checkpoints (`inspect.rs`: `history`, `state_at`, `fields_at`, `diff`, `lineage`, `path`) and the
//!   debugging operations (`debug.rs`: `replay`, `fork`, `run_node`, `set_breakpoints`) stand apart from it;
//!   `subscribe` streams [`Event`]s.
//! - Inside a node, [`NodeContext`] (`context.rs`): `effect` (journaled side effects), `emit` (custom
//!   events), `interrupt` (stop and wait for an answer).
//! - What is stored: [`Checkpoint`] and [`GraphRunMeta`] (`checkpoint.rs`) in a [`CheckpointStore`] (`store/`).
//!
//! Choices worth knowing:
//! - **Declared writes.** `.writes(&["field", ..])` on the builder, not derived from the update type: an
//!   update type lists every field a node *could* set, so it cannot tell two parallel nodes apart. The
//!   declaration is checked against the state's fields at `compile()` and enforced at run time; a node
//!   without one is assumed to write every field (which matters only when it runs in parallel).
//! - **Checkpoints are per-field deltas** (overwrite/custom: the new value; append: the appended items),
//!   with a full snapshot every [`FULL_SNAPSHOT_EVERY`] checkpoints and on the first checkpoint of each call.
//! - **Effects** are journaled under (branch, step, node, task index, attempt, effect name, call index or
//!   caller key). A replay branch may reuse its origin branch's journal; a fork with an edited state may not.
//! - **Stops and errors**: breakpoints and node interrupts end a call with [`RunOutcome::Stopped`] (stored
//!   with the run; `resume` steps over them once); failures are [`GraphError`]s naming run, node and
//!   checkpoint, and the last committed checkpoint is always a valid place to resume from.
//! - One call drives a given run at a time (checkpoint ids are allocated by the driving call).
//! - [`state!`] takes no doc comments or serde attributes on fields (document fields in comments).
//!
//! ```
//! use kt_graph::{END, Executor, GraphBuilder, MemoryStore, NoError, RunId, RunOptions, START, node_fn};
//! use serde::{Deserialize, Serialize};
//! use std::sync::Arc;
//!
//! kt_graph::state! {
//!     #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
//!     pub struct Counter => CounterUpdate {
//!         #[overwrite] pub count: u64,
//!         #[append] pub log: Vec<String>,
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let mut b = GraphBuilder::<Counter>::new();
//! b.node("tick", node_fn(|s: Arc<Counter>, _ctx| async move {
//!     Ok::<_, NoError>(CounterUpdate::default().count(s.count + 1).log(vec![format!("tick {}", s.count)]))
//! }))
//! .writes(&["count", "log"]);
//! b.edge(START, "tick");
//! b.route("tick", &["tick", END], |s: &Counter| if s.count < 3 { "tick" } else { END });
//! let graph = b.compile()?;
//!
//! let exec = Executor::new(graph, Arc::new(MemoryStore::new()));
//! let run = RunId::new("demo");
//! let out = exec.start(run.clone(), Counter::default(), RunOptions::default()).await?;
//! assert_eq!(out.state().count, 3);
//!
//! // Time travel: history, per-field diff, replay from the first step on a new branch.
//! let history = exec.history(&run)?;
//! assert_eq!(history.len(), 4); // input + 3 steps
//! let diff = exec.diff(&run, history[0].id, out.checkpoint())?;
//! assert_eq!(diff.len(), 2);
//! let again = exec.replay(&run, history[1].id, RunOptions::default()).await?;
//! assert_eq!(again.state(), out.state());
//! # Ok::<(), kt_graph::GraphError>(())
//! # }).unwrap();
//! ```

// Tests may unwrap: a panic there is a failed test with its message.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod builder;
mod cancel;
mod checkpoint;
mod checkpoint_head;
mod context;
mod decl;
mod error;
mod events;
mod executor;
mod export;
mod graph;
mod ids;
mod node;
mod policy;
mod state;
mod store;
mod subgraph;

pub use builder::{GraphBuilder, NodeBuilder};
pub use cancel::CancelToken;
pub use checkpoint::{
    BranchInfo, Breakpoints, Checkpoint, CheckpointSource, FULL_SNAPSHOT_EVERY, FieldOp,
    GraphRunMeta, NodeTiming, RoutedFailure, StateRecord, StopReason, Task, fold_ops,
};
pub use checkpoint_head::{CheckpointHead, lineage_of};
pub use context::{EffectError, Interrupted, NodeContext, ReplayMode};
pub use decl::{END, START};
pub use error::{GraphError, NodeError};
pub use events::{Event, EventKind};
pub use executor::debug::{NodeRun, RunNodeOptions};
pub use executor::inspect::{FieldDiff, RunPath, path_along};
pub use executor::run::{RunOptions, RunOutcome};
pub use executor::{Executor, Migration};
pub use export::ExportOptions;
pub use graph::CompiledGraph;
pub use ids::{BranchId, CheckpointId, RunId};
pub use node::{FnNode, NoError, Node, node_fn};
pub use policy::Retry;
pub use state::{__private, FieldSpec, Merge, State};
pub use store::{CheckpointStore, MemoryStore, SqliteStore};
pub use subgraph::Subgraph;

#[cfg(test)]
mod tests;
