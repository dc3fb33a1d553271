//! The one error type of kt-cuda.

use std::path::PathBuf;

use crate::location::Location;

/// One place where tree-sitter could not make sense of the source.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct SyntaxProblem {
    pub location: Location,
    /// `unexpected input` for ERROR nodes, `missing X` for MISSING nodes.
    pub message: String,
    /// The offending line as written, for showing the user.
    pub line_text: String,
    /// The file the problem is in, when the source spans several files (a followed header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_file: Option<String>,
}

impl std::fmt::Display for SyntaxProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = &self.origin_file {
            write!(f, "{file}: ")?;
        }
        write!(
            f,
            "line {}, column {}: {}\n    {}",
            self.location.line,
            self.location.column,
            self.message,
            self.line_text.trim_end()
        )
    }
}

fn list_problems(problems: &[SyntaxProblem]) -> String {
    problems
        .iter()
        .map(|p| format!("  {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "{what} does not look like CUDA source: {reason}; kt needs a .cu file with a __global__ kernel"
    )]
    NotCuda { what: String, reason: String },

    #[error(
        "the source nests deeper than {limit} levels (braces, parentheses, `#if`s or one long expression) at line \
         {line}; kt does not analyse code nested this deeply: split the expression or the nesting"
    )]
    TooDeeplyNested { limit: usize, line: usize },

    #[error("syntax errors in {what} (fix these, then run again):\n{}", list_problems(.problems))]
    Syntax {
        what: String,
        problems: Vec<SyntaxProblem>,
    },

    /// `includes` says which includes were followed or not found (empty when there were none).
    #[error("no __global__ function found in {what}{includes}; kt needs a CUDA kernel")]
    NoKernel { what: String, includes: String },

    #[error("kernel `{kernel}` in {what} has no `{kernel}` definition kt can extract: {reason}")]
    Unit {
        what: String,
        kernel: String,
        reason: String,
    },

    #[error(
        "parameter `{param}` of kernel `{kernel}` is passed by value as `{type_text}`, which kt cannot marshal: {reason}"
    )]
    ByValueParam {
        kernel: String,
        param: String,
        type_text: String,
        reason: String,
    },

    #[error("the signatures differ: `{before}` vs `{after}`: {}", .changes.join("; "))]
    SignatureMismatch {
        before: String,
        after: String,
        changes: Vec<String>,
    },

    #[error("{what} has {} kernels ({}); choose one with --kernel NAME", .available.len(), .available.join(", "))]
    KernelNotChosen {
        what: String,
        available: Vec<String>,
    },

    #[error("no kernel named `{requested}` in {what}; available: {}", .available.join(", "))]
    KernelNotFound {
        what: String,
        requested: String,
        available: Vec<String>,
    },

    #[error(
        "kernel `{name}` of {what} is defined through the macro `{macro_name}` (line {line}): kt analyses kernels written out, not macro expansions; expand the macro for this kernel (nvcc -E shows the expansion) into a file and give kt that file"
    )]
    MacroKernel {
        what: String,
        name: String,
        macro_name: String,
        line: usize,
    },

    #[error(
        "tree-sitter could not load the CUDA grammar: {0}; the tree-sitter and tree-sitter-cuda versions do not match"
    )]
    Grammar(String),

    #[error("cannot rewrite the source: {0}")]
    Rewrite(String),

    #[error("sidecar {path}: {message}")]
    Sidecar { path: PathBuf, message: String },
}
