//! The crate's one error type. Each variant names the run, checkpoint, node or file involved and says what to
//! do about it.

use std::path::PathBuf;

/// Everything that can go wrong finding, reading, debugging or reporting on a run.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    #[error(
        "no run `{arg}`: it is neither a run directory nor a run id under {searched}; `kt runs list` shows the runs there (or pass --runs-dir)"
    )]
    RunNotFound { arg: String, searched: PathBuf },
    /// Running part of a run again (kt-runs: a node, a replay, a fork) failed in the pipeline: its graph could
    /// not be rebuilt or its backend set up. The source is kt-pipeline's error, which this reading crate does
    /// not depend on.
    #[error("run directory {run}: {source}")]
    Pipeline {
        run: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A run directory whose records cannot be opened.
    #[error("run directory {run}: {source}")]
    RunDir {
        run: PathBuf,
        #[source]
        source: kt_record::RecordError,
    },
    #[error(
        "run directory {run} has no graph history (run.sqlite is missing or holds no run){detail}"
    )]
    NoHistory { run: PathBuf, detail: String },
    #[error(
        "run {run} has not reached `{wanted}`: it has {has} (a run stopped before Stage 3 has only the stages it ran; \
         `kt resume` continues it, on a GPU machine where it stopped for one); `kt debug history RUN --graph {newest}` \
         reads what it has"
    )]
    NoGraph {
        run: PathBuf,
        wanted: String,
        has: String,
        newest: String,
    },
    #[error("run `{run}`: {source}")]
    Graph {
        run: String,
        // Boxed: the engine's error is large, and every `Result` of the crate would carry its size.
        #[source]
        source: Box<kt_graph::GraphError>,
    },
    #[error(
        "`{spec}` is not a checkpoint: give a number from `kt debug history` (e.g. 7 or #7), `input` or `latest`"
    )]
    BadCheckpoint { spec: String },
    #[error("run `{run}` has no checkpoint #{checkpoint}; `kt debug history` lists them")]
    NoCheckpoint { run: String, checkpoint: u64 },
    #[error("the state has no field `{field}`; its fields are: {known}")]
    UnknownField { field: String, known: String },
    #[error("the graph has no node `{node}`; its nodes are: {known}")]
    UnknownNode { node: String, known: String },
    #[error("`{spec}`: {reason}")]
    BadSetting { spec: String, reason: String },
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON of the expected shape: {reason}")]
    BadJson { path: PathBuf, reason: String },
    /// The LLM a re-run answers with could not be set up (kt-runs; the source is kt-llm's error).
    #[error(transparent)]
    Llm(Box<dyn std::error::Error + Send + Sync>),
    /// A record of the run directory (kt-record) that cannot be read.
    #[error(transparent)]
    Record(#[from] kt_record::RecordError),
    #[error("{0}")]
    Usage(String),
    /// An answer meant for a prompt the run no longer waits for (or one already answered).
    #[error("{0}")]
    StaleAnswer(String),
    #[error("could not copy the run's history to a scratch store for a dry run: {0}")]
    Scratch(String),
}

impl RunsError {
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RunsError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    pub fn graph(run: &kt_graph::RunId, source: kt_graph::GraphError) -> Self {
        RunsError::Graph {
            run: run.to_string(),
            source: Box::new(source),
        }
    }
}
