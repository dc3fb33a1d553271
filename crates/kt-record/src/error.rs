//! The one error type of kt-record: a record that cannot be read or written, or a value outside the tests format.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid {what}: {message}")]
    BadFile {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
    /// A record could not be written for want of space; the previous record is unchanged.
    #[error(
        "the disk is full: writing {path} needs {needed} bytes{}; the previous file is unchanged. Free some space, \
         then `kt resume` the run",
        available.map(|a| format!(" and {a} are free")).unwrap_or_default()
    )]
    DiskFull {
        path: PathBuf,
        needed: u64,
        available: Option<u64>,
    },
    /// A .npy file kt cannot use as a kernel argument.
    #[error("cannot read {path}: {message}")]
    Npy { path: PathBuf, message: String },
    /// A dtype name or a scalar value the tests format has no place for.
    #[error("{0}")]
    Dtype(String),
}

impl RecordError {
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RecordError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn npy(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        RecordError::Npy {
            path: path.into(),
            message: message.to_string(),
        }
    }
}
