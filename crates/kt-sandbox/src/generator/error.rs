//! Why a generator run produced no test. Every variant that comes from the generator carries what the LLM needs to
//! fix it (the parameter, what was expected, what it got, its verbatim traceback).

use std::path::PathBuf;
use std::time::Duration;

use crate::error::SandboxError;
use crate::outcome::Limit;
use crate::python::PythonError;

#[derive(Debug, thiserror::Error)]
pub enum GeneratorError {
    #[error("generate() returned {got} arguments but kernel takes {expected} ({names})", names = names.join(", "))]
    WrongArgCount {
        expected: usize,
        got: usize,
        names: Vec<String>,
    },

    #[error("argument `{param}` has dtype {got} but the kernel parameter needs {expected}")]
    WrongDtype {
        param: String,
        expected: String,
        got: String,
    },

    #[error("argument `{param}` must be {expected}, got {got}")]
    WrongKind {
        param: String,
        expected: String,
        got: String,
    },

    #[error("argument `{param}` has the wrong size: expected {expected}, got {got}")]
    WrongSize {
        param: String,
        expected: String,
        got: String,
    },

    #[error("argument `{param}` has a bad value: {detail}")]
    BadScalar { param: String, detail: String },

    #[error("generate() returned {detail}")]
    BadReturn { detail: String },

    #[error("the generator defines no usable generate function: {detail}")]
    NoGenerateFunction { detail: String },

    #[error(
        "the arguments total {bytes} bytes, more than the limit of {limit} bytes; generate smaller inputs"
    )]
    TooLarge { bytes: u64, limit: u64 },

    #[error("the generator raised an exception:\n{traceback}")]
    GeneratorRaised {
        exception: String,
        traceback: String,
    },

    #[error(
        "the generator imports `{module}`, which is not installed (only the standard library and numpy are available):\n{traceback}"
    )]
    ImportMissing { module: String, traceback: String },

    #[error(
        "the generator tried to use the network, which the sandbox does not have:\n{traceback}"
    )]
    NetworkDenied { traceback: String },

    #[error(
        "the generator tried to write outside its working directory ({path}), which is not allowed:\n{traceback}"
    )]
    PermissionDenied { path: String, traceback: String },

    #[error("{what} `{expression}` could not be evaluated with the generated scalars: {error}")]
    BadExpression {
        what: String,
        expression: String,
        error: String,
    },

    #[error("the generator was stopped by the sandbox's {which}: {detail}")]
    LimitExceeded { which: Limit, detail: String },

    #[error("the generator did not finish within {after:?} and was killed")]
    TimedOut { after: Duration },

    #[error(
        "the generator printed more than {limit} bytes and was killed; do not print the arrays"
    )]
    OutputTooLarge { limit: usize },

    #[error("the generator crashed with signal {signal}: {stderr}")]
    Crashed { signal: i32, stderr: String },

    #[error(
        "kt's generator harness failed (exit code {exit_code}); this is a kt bug or a broken Python: {stderr}"
    )]
    HarnessFailed { exit_code: i32, stderr: String },

    #[error(
        "the generator's output does not match what the harness reported ({detail}); the generator may have tampered with kt's harness"
    )]
    OutputInvalid { detail: String },

    #[error("invalid generator spec: {detail}")]
    SpecInvalid { detail: String },

    #[error("could not {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(transparent)]
    Sandbox(#[from] SandboxError),

    #[error(transparent)]
    Python(#[from] PythonError),
}

impl GeneratorError {
    /// True for errors the LLM can fix by changing the generator (worth sending back with the message).
    pub fn is_generator_fault(&self) -> bool {
        !matches!(
            self,
            GeneratorError::HarnessFailed { .. }
                | GeneratorError::SpecInvalid { .. }
                | GeneratorError::Io { .. }
                | GeneratorError::Sandbox(_)
                | GeneratorError::Python(_)
        )
    }
}
