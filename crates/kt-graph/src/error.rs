//! The crate's one error type. Every variant names the node, run or checkpoint involved and says what to do.

use std::sync::Arc;

use crate::ids::{CheckpointId, RunId};

/// Everything that can go wrong building, running, storing or inspecting a graph.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    // ---- build (compile) errors ----
    #[error("node `{node}` is defined twice; node names must be unique")]
    DuplicateNode { node: String },
    #[error("`{node}` is a reserved name (START/END); pick another node name")]
    ReservedName { node: String },
    #[error("`{referenced_by}` refers to unknown node `{node}`; add the node or fix the name")]
    UnknownNode { node: String, referenced_by: String },
    #[error("the graph has no edge from START; add `builder.edge(START, \"first\")`")]
    NoEntry,
    #[error("node `{node}` is unreachable from START; connect it or remove it")]
    Unreachable { node: String },
    #[error(
        "node `{node}` has no path to END; add an edge, route or on_exhausted target leading to END"
    )]
    NoPathToEnd { node: String },
    #[error("node `{node}` declares a write to unknown state field `{field}`")]
    UnknownField { node: String, field: String },
    #[error(
        "overwrite field `{field}` can be written by `{first}` and `{second}` in the same step; \
         make the field append/custom or stop those nodes running in parallel"
    )]
    ConflictingWrites {
        field: String,
        first: String,
        second: String,
    },

    // ---- run errors ----
    #[error(
        "router of node `{node}` returned `{target}`, which is not among its declared targets {declared:?}"
    )]
    UndeclaredTarget {
        node: String,
        target: String,
        declared: Vec<String>,
    },
    #[error("node `{node}` wrote field `{field}` which it did not declare with `.writes(..)`")]
    UndeclaredWrite { node: String, field: String },
    #[error(
        "run `{run}`: node `{node}` failed at step {step} after {attempts} attempt(s): {message}"
    )]
    NodeFailed {
        run: RunId,
        node: String,
        step: u64,
        attempts: u32,
        message: String,
        /// The node's own error, typed (None for a panic, a timeout or an interrupt): callers ask it what
        /// went wrong with [`GraphError::node_error`] instead of reading `message`.
        cause: Option<NodeError>,
    },
    #[error(
        "run `{run}`: step limit of {limit} reached at checkpoint {checkpoint}; raise RunOptions::step_limit if the loop is intended"
    )]
    StepLimit {
        run: RunId,
        limit: u64,
        checkpoint: CheckpointId,
    },
    #[error(
        "run `{run}` was cancelled; its last checkpoint is {checkpoint} (resume continues from there)"
    )]
    Cancelled {
        run: RunId,
        checkpoint: CheckpointId,
    },
    #[error("run `{run}`: node `{node}` is not in this graph")]
    NoSuchNode { run: RunId, node: String },

    // ---- store / history errors ----
    #[error("run `{run}` does not exist in the store")]
    RunNotFound { run: RunId },
    #[error("run `{run}` already exists; use resume/replay, or start under a new run id")]
    RunExists { run: RunId },
    #[error("run `{run}` has no checkpoint {checkpoint}")]
    CheckpointNotFound {
        run: RunId,
        checkpoint: CheckpointId,
    },
    #[error(
        "run `{run}` checkpoint {checkpoint} was written by a different graph (fingerprint {stored}, this graph {current}); \
         pass a Migration for fingerprint {stored} to use it"
    )]
    FingerprintMismatch {
        run: RunId,
        checkpoint: CheckpointId,
        stored: String,
        current: String,
    },
    #[error(
        "run `{run}` checkpoint {checkpoint}: the state no longer deserializes ({reason}); add a Migration or fix the state type"
    )]
    StateDecode {
        run: RunId,
        checkpoint: CheckpointId,
        reason: String,
    },
    #[error("run `{run}` checkpoint {checkpoint} is corrupt in the store: {reason}")]
    CorruptCheckpoint {
        run: RunId,
        checkpoint: CheckpointId,
        reason: String,
    },
    #[error("run `{run}`: could not serialize {what}: {reason}")]
    Serialize {
        run: RunId,
        what: String,
        reason: String,
    },
    #[error("checkpoint store `{location}` is unreadable or not a kt-graph database: {reason}")]
    StoreCorrupt { location: String, reason: String },
    #[error("checkpoint store `{location}` failed during {operation}: {reason}")]
    Store {
        location: String,
        operation: String,
        reason: String,
    },
    #[error("run `{run}` migration from fingerprint {from} failed: {reason}")]
    Migration {
        run: RunId,
        from: String,
        reason: String,
    },
}

/// A node's error as the node returned it, kept behind its `std::error::Error` face so that whoever ran the
/// graph can downcast it to the node's error type.
#[derive(Clone)]
pub struct NodeError(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl NodeError {
    pub(crate) fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(e))
    }

    /// The node's error as `E`, when that is its type.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl std::fmt::Debug for NodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeError({})", self.0)
    }
}

impl GraphError {
    /// The error of type `E` that a failed node returned, looking through subgraphs (whose nodes fail with
    /// the inner run's `GraphError`). None when no node failed that way.
    pub fn node_error<E: std::error::Error + 'static>(&self) -> Option<&E> {
        let Self::NodeFailed {
            cause: Some(cause), ..
        } = self
        else {
            return None;
        };
        cause.downcast_ref::<E>().or_else(|| {
            cause
                .downcast_ref::<GraphError>()
                .and_then(|inner| inner.node_error::<E>())
        })
    }

    /// True for errors found by `compile()` (the graph is wrong, not the run).
    pub fn is_build_error(&self) -> bool {
        matches!(
            self,
            Self::DuplicateNode { .. }
                | Self::ReservedName { .. }
                | Self::UnknownNode { .. }
                | Self::NoEntry
                | Self::Unreachable { .. }
                | Self::NoPathToEnd { .. }
                | Self::UnknownField { .. }
                | Self::ConflictingWrites { .. }
        )
    }
}
