//! The crate's one error type. Every variant names the file or cell it concerns and what to do about it.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("{path}: {action} failed: {source}")]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "{path}: not a valid experiment design: {detail}. See the format in kt-experiments' design module docs"
    )]
    Design { path: PathBuf, detail: String },

    #[error(
        "{path}: kernel pattern `{pattern}` matches no file; fix the path (it is relative to the design's root {root})"
    )]
    NoKernel {
        path: PathBuf,
        pattern: String,
        root: PathBuf,
    },

    #[error("no cell `{id}` in {path}; list the cells with `kt experiment cells {path}`")]
    UnknownCell { id: String, path: PathBuf },

    #[error("{path} line {line}: not a cell record ({detail}); remove or fix that line")]
    Ledger {
        path: PathBuf,
        line: usize,
        detail: String,
    },

    #[error(
        "cannot start `{program}` for cell {cell}: {source}. Check that the kt binary exists and is executable"
    )]
    Spawn {
        program: PathBuf,
        cell: String,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot signal process {pid} of cell {cell}: {detail}")]
    Signal {
        pid: i32,
        cell: String,
        detail: String,
    },

    #[error("cannot install the Ctrl-C handler: {detail}")]
    Interrupt { detail: String },

    #[error(
        "no cell records under {dir}: run `kt experiment run` first, or point at the experiment's output directory"
    )]
    NoRecords { dir: PathBuf },

    #[error("plot {path}: {detail}")]
    Plot { path: PathBuf, detail: String },

    #[error("invalid option: {detail}")]
    Option { detail: String },
}

impl ExperimentError {
    pub(crate) fn io(path: impl AsRef<Path>, action: &'static str, source: std::io::Error) -> Self {
        ExperimentError::Io {
            path: path.as_ref().to_path_buf(),
            action,
            source,
        }
    }

    pub(crate) fn design(path: impl AsRef<Path>, detail: impl Into<String>) -> Self {
        ExperimentError::Design {
            path: path.as_ref().to_path_buf(),
            detail: detail.into(),
        }
    }
}
