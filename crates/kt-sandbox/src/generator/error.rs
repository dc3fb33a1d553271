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

    #[error("{}", missing_constants(names))]
    MissingConstants {
        /// The symbols the kernel reads that generate() gave no contents for.
        names: Vec<String>,
    },

    #[error(
        "generate() returned contents for `{name}`, which is not a `__constant__` symbol the kernel reads (it reads: {})",
        if reads.is_empty() { "none".to_string() } else { reads.join(", ") }
    )]
    UnknownConstant { name: String, reads: Vec<String> },

    #[error("the contents of `__constant__` symbol `{name}` {detail}")]
    BadConstant { name: String, detail: String },

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

    #[error("{}", permission_denied(path, traceback))]
    PermissionDenied { path: String, traceback: String },

    #[error("{what} `{expression}` could not be evaluated with the generated scalars: {error}")]
    BadExpression {
        what: String,
        expression: String,
        error: String,
    },

    #[error("{}", limit_exceeded(*which, detail))]
    LimitExceeded { which: Limit, detail: String },

    #[error("the generator did not finish within {after:?} and was killed")]
    TimedOut { after: Duration },

    #[error("{}", disk_quota_exceeded(*limit, *used, *entries))]
    DiskQuota { limit: u64, used: u64, entries: u64 },

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

    #[error(
        "kt refused to read `out/{file}` that the generator left: {detail}; a generator only returns its arrays \
         from generate(), kt's harness writes the files"
    )]
    OutputRefused { file: String, detail: String },

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

/// Names what is missing and shows the shape of an answer that fills it.
fn missing_constants(names: &[String]) -> String {
    let entries: Vec<String> = names
        .iter()
        .map(|n| format!("\"{n}\": <numpy array>"))
        .collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "generate() gave no contents for the `__constant__` symbol{} {} that the kernel reads; return \
         {{\"args\": [<arguments in parameter order>], \"constants\": {{{}}}}}",
        if names.len() == 1 { "" } else { "s" },
        quoted.join(", "),
        entries.join(", ")
    )
}

/// A denied file names the file; a denied operation without one (signalling kt, changing what it does not own)
/// says so instead of an empty "()".
fn permission_denied(path: &str, traceback: &str) -> String {
    if path.is_empty() {
        format!(
            "the generator tried an operation the sandbox does not allow (signalling or tracing a process outside \
             it, changing a file it does not own); only computing the arrays and writing in its working directory \
             are allowed:\n{traceback}"
        )
    } else {
        format!(
            "the generator tried to write outside its working directory ({path}), which is not allowed:\n{traceback}"
        )
    }
}

/// The limit and, when the program said anything, its last words.
fn disk_quota_exceeded(limit: u64, used: u64, entries: u64) -> String {
    use crate::disk_quota::{MAX_ENTRIES, human};
    let what = if entries > MAX_ENTRIES {
        format!("held more than {MAX_ENTRIES} files and directories")
    } else {
        format!("took more than {} on disk", human(used))
    };
    format!(
        "the generator was stopped by the sandbox's disk quota: its work directory {what}, over the quota of {} \
         ({MAX_ENTRIES} entries at most); write no files besides what generate() returns. If the inputs really \
         need more, raise the quota with `disk_quota_mb = N` in the [sandbox] section of kt.toml",
        human(limit)
    )
}

fn limit_exceeded(which: Limit, detail: &str) -> String {
    let advice = match which {
        Limit::Cpu => "; generate the inputs with vectorised numpy calls instead of Python loops",
        Limit::Memory | Limit::RunMemory => "; generate smaller inputs or avoid large temporaries",
        Limit::FileSize => "; write no files besides what generate() returns",
        Limit::Processes => "; start no processes or threads",
        Limit::OpenFiles => "; close the files you open",
    };
    let detail = detail.trim();
    if detail.is_empty() {
        format!("the generator was stopped by the sandbox's {which}{advice}")
    } else {
        format!("the generator was stopped by the sandbox's {which}{advice}:\n{detail}")
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_constant_is_named_with_the_shape_of_an_answer_that_fills_it() {
        let text = GeneratorError::MissingConstants {
            names: vec!["coeffs".into()],
        }
        .to_string();
        assert!(
            text.contains("`__constant__` symbol `coeffs` that the kernel reads")
                && text.contains(r#"{"args": [<arguments in parameter order>], "constants": {"coeffs": <numpy array>}}"#),
            "{text}"
        );
        let unknown = GeneratorError::UnknownConstant {
            name: "weights".into(),
            reads: vec![],
        }
        .to_string();
        assert!(unknown.ends_with("(it reads: none)"), "{unknown}");
    }

    #[test]
    fn an_empty_detail_leaves_no_dangling_colon_and_an_empty_path_no_empty_parentheses() {
        let cpu = GeneratorError::LimitExceeded {
            which: Limit::Cpu,
            detail: "  ".into(),
        }
        .to_string();
        assert!(
            !cpu.contains(": :") && !cpu.trim_end().ends_with(':'),
            "{cpu}"
        );
        assert!(
            cpu.contains("CPU-time limit") && cpu.contains("vectorised"),
            "{cpu}"
        );
        let denied = GeneratorError::PermissionDenied {
            path: String::new(),
            traceback: "PermissionError: [Errno 1] Operation not permitted".into(),
        }
        .to_string();
        assert!(!denied.contains("()"), "{denied}");
        assert!(denied.contains("signalling"), "{denied}");
        let file = GeneratorError::PermissionDenied {
            path: "/etc/passwd".into(),
            traceback: String::new(),
        }
        .to_string();
        assert!(file.contains("(/etc/passwd)"), "{file}");
    }
}
