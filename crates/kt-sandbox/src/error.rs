//! Errors of kt-sandbox's process machinery (what went wrong *around* the program; what the program itself did
//! is an [`crate::Outcome`]).

use std::path::PathBuf;

/// Why a sandboxed program could not be run or watched.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "network isolation is required (strict mode) but this machine cannot create a network namespace ({why}); \
         run kt as root or enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1), \
         or drop strict mode"
    )]
    NetworkIsolationUnavailable { why: String },

    #[error(
        "could not prepare the sandbox work directory {path}: {source}; check that the temporary directory is writable"
    )]
    Workdir {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "could not start `{program}` in the sandbox: {source}; check that it exists and is executable{hint}"
    )]
    Spawn {
        program: String,
        source: std::io::Error,
        hint: String,
    },

    #[error("could not open {path} to make it readable inside the sandbox: {source}")]
    ReadablePath {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("lost track of sandboxed process {pid}: {source}")]
    Wait { pid: u32, source: std::io::Error },

    #[error("could not talk to sandboxed process {pid}: {what}")]
    Pipe { pid: u32, what: String },
}
