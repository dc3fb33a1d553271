//! A compiled graph used as a node of another graph.
//!
//! The inner graph runs to completion inside the outer node, with its own in-memory checkpoints (the outer
//! graph checkpoints the node's result, so a resume re-runs the subgraph as a whole). Its state type may
//! differ: `enter` maps the outer state in, `exit` maps the final inner state to an outer update.

use crate::builder::{GraphBuilder, NodeBuilder};
use crate::context::NodeContext;
use crate::error::GraphError;
use crate::executor::Executor;
use crate::executor::run::{RunOptions, RunOutcome};
use crate::graph::CompiledGraph;
use crate::ids::RunId;
use crate::node::Node;
use crate::state::State;
use crate::store::MemoryStore;
use std::sync::Arc;

/// The node a subgraph becomes. Its error is the inner run's [`GraphError`] (a stop inside the subgraph
/// is reported as [`GraphError::NodeFailed`] naming the inner node).
pub struct Subgraph<S: State, T: State> {
    graph: CompiledGraph<T>,
    enter: Arc<dyn Fn(&S) -> T + Send + Sync>,
    exit: Arc<dyn Fn(T) -> S::Update + Send + Sync>,
}

impl<S: State, T: State> Node<S> for Subgraph<S, T> {
    type Error = GraphError;

    async fn run(&self, state: Arc<S>, ctx: NodeContext) -> Result<S::Update, GraphError> {
        let exec = Executor::new(self.graph.clone(), Arc::new(MemoryStore::new()));
        let run = RunId::new(format!(
            "{}/{}/step{}#{}",
            ctx.run_id(),
            ctx.node(),
            ctx.step(),
            ctx.task_index()
        ));
        let opts = RunOptions {
            cancel: ctx.cancel_token().clone(),
            ..RunOptions::default()
        };
        match exec.start(run.clone(), (self.enter)(&state), opts).await? {
            RunOutcome::Finished { state, .. } => Ok((self.exit)(state)),
            RunOutcome::Stopped {
                reason, checkpoint, ..
            } => Err(GraphError::NodeFailed {
                run,
                node: ctx.node().to_string(),
                step: ctx.step(),
                attempts: 1,
                message: format!("subgraph stopped at {checkpoint}: {reason:?}"),
                cause: None,
            }),
            RunOutcome::Paused { checkpoint, .. } => Err(GraphError::NodeFailed {
                run,
                node: ctx.node().to_string(),
                step: ctx.step(),
                attempts: 1,
                message: format!("subgraph paused at {checkpoint}"),
                cause: None,
            }),
        }
    }
}

impl<S: State> GraphBuilder<S> {
    /// Adds a compiled graph as a node.
    pub fn subgraph<T: State>(
        &mut self,
        name: impl Into<String>,
        graph: CompiledGraph<T>,
        enter: impl Fn(&S) -> T + Send + Sync + 'static,
        exit: impl Fn(T) -> S::Update + Send + Sync + 'static,
    ) -> NodeBuilder<'_, S, Subgraph<S, T>> {
        self.node(
            name,
            Subgraph {
                graph,
                enter: Arc::new(enter),
                exit: Arc::new(exit),
            },
        )
    }
}
