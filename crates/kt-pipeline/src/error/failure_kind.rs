//! [`FailureKind`]: why a candidate attempt failed, so retry handlers can pick their wording and the report can
//! count failures by kind.

use serde::{Deserialize, Serialize};

/// Why one attempt at a step produced no usable kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The answer held no code or was not the JSON asked for (after the client's own re-asks).
    BadAnswer,
    /// kt's static checks refused the rewrite (signature changed, host code, parameter names, restrictions).
    Refused,
    CompileError,
    WrongAnswer,
    Timeout,
    Crashed,
    NoValidConfig,
    /// The LLM could not be reached or answered with an error after the client's retries.
    LlmUnavailable,
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailureKind::BadAnswer => "unusable answer",
            FailureKind::Refused => "rewrite refused",
            FailureKind::CompileError => "compile error",
            FailureKind::WrongAnswer => "wrong answer",
            FailureKind::Timeout => "timeout",
            FailureKind::Crashed => "crash",
            FailureKind::NoValidConfig => "no valid configuration",
            FailureKind::LlmUnavailable => "LLM unavailable",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::FailureKind;

    #[test]
    fn kinds_serialize_in_snake_case_and_display_in_words() {
        assert_eq!(
            serde_json::to_string(&FailureKind::NoValidConfig).unwrap_or_default(),
            "\"no_valid_config\""
        );
        assert_eq!(FailureKind::LlmUnavailable.to_string(), "LLM unavailable");
    }
}
