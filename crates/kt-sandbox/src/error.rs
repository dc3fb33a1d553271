//! Errors of kt-sandbox's process machinery (what went wrong *around* the program; what the program itself did
//! is an `Outcome`).

use std::path::PathBuf;

/// Why a sandboxed program could not be run or watched.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "generated programs run only without network access, and this machine cannot give them a network namespace \
         ({why}). Fix: run kt as root, or enable unprivileged user namespaces (sysctl \
         kernel.unprivileged_userns_clone=1; on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0). Or, \
         accepting that LLM-written programs can then reach the network, pass --allow-unsandboxed to kt transform / \
         kt testgen, or set `[sandbox] allow_unsandboxed = true` in kt.toml"
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

    #[error(
        "could not read the [sandbox] section of {path}: {detail}; the only key is `allow_unsandboxed = true|false`"
    )]
    Config { path: PathBuf, detail: String },

    #[error("lost track of sandboxed process {pid}: {source}")]
    Wait { pid: u32, source: std::io::Error },

    #[error("could not talk to sandboxed process {pid}: {what}")]
    Pipe { pid: u32, what: String },
}
