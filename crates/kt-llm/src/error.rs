//! The one error type of this crate. Every variant says what happened, carries the context a user needs
//! (provider, node, HTTP status, an excerpt of the body) and what to do about it.

use std::path::PathBuf;
use std::time::Duration;

/// Which deadline a request ran past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// The TCP/TLS connection was not established in time.
    Connect,
    /// The server accepted the request but sent no response headers in time.
    FirstByte,
    /// The whole request (including reading the body) took too long.
    Total,
    /// A streaming response stopped sending chunks for too long.
    Idle,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "connect",
            TimeoutPhase::FirstByte => "first byte",
            TimeoutPhase::Total => "total",
            TimeoutPhase::Idle => "stream idle",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(
        "{provider}: authentication failed (HTTP {status}): {body}; check the API key in ${key_env} \
         (or `api_key_env` in the [llm] section of kt.toml)"
    )]
    Auth {
        provider: String,
        status: u16,
        body: String,
        key_env: String,
    },

    #[error(
        "{provider}: rate limited (HTTP 429{}) after {attempts} attempt(s): {body}; wait, lower the request rate, \
         or raise the retry limit",
        retry_after.map(|d| format!(", Retry-After {:.1}s", d.as_secs_f64())).unwrap_or_default()
    )]
    RateLimited {
        provider: String,
        retry_after: Option<Duration>,
        attempts: u32,
        body: String,
    },

    #[error(
        "{provider}: {phase} timeout after {:.1}s ({url}); the server is slow or unreachable: raise the \
         limit (`--timeout`, `[llm] total_timeout_s` / `idle_timeout_s`, or per model in `[llm.models.\"NAME\"]`) \
         or check the endpoint with `kt doctor`",
        after.as_secs_f64()
    )]
    Timeout {
        provider: String,
        phase: TimeoutPhase,
        after: Duration,
        url: String,
    },

    #[error(
        "{provider}: server error HTTP {status} after {attempts} attempt(s): {body}; retry later"
    )]
    Server {
        provider: String,
        status: u16,
        attempts: u32,
        body: String,
        /// A `Retry-After` sent with the error (common with 503).
        retry_after: Option<Duration>,
    },

    #[error("{provider}: request rejected with HTTP {status}: {body}; {hint}")]
    BadRequest {
        provider: String,
        status: u16,
        body: String,
        hint: String,
    },

    #[error(
        "{provider}: cannot connect to {url}: {detail}; is the server running and the base URL right?"
    )]
    Connection {
        provider: String,
        url: String,
        detail: String,
    },

    #[error(
        "{provider}: the {what} is larger than the {limit} bytes kt accepts ({bytes} bytes{}); {advice}",
        if *complete { "" } else { " and more, refused while it arrived" }
    )]
    TooLarge {
        provider: String,
        /// `answer` or `prompt`.
        what: &'static str,
        bytes: u64,
        limit: u64,
        /// False when the transfer was stopped at the limit.
        complete: bool,
        advice: &'static str,
    },

    #[error("{provider}: unusable response: {detail}; body starts: {body}")]
    BadResponse {
        provider: String,
        detail: String,
        body: String,
    },

    #[error(
        "no code block in the answer{}: {detail}; answer starts: {excerpt}",
        node_suffix(node)
    )]
    NoCode {
        node: Option<String>,
        detail: String,
        excerpt: String,
    },

    #[error(
        "node `{node}`: answer does not match the schema of {type_name} after {attempts} attempt(s): {error}; \
         answer starts: {excerpt}; try the `separate` or `hybrid` structured mode or a stronger model"
    )]
    SchemaMismatch {
        node: String,
        type_name: String,
        attempts: u32,
        error: String,
        excerpt: String,
    },

    #[error(
        "node `{node}`: the cassette {} has no recorded answer for this request (hash {hash}); {hint}",
        cassette.display()
    )]
    ReplayMiss {
        node: String,
        hash: String,
        cassette: PathBuf,
        hint: String,
    },

    /// The `manual` provider wrote a prompt and has no answer for it yet. The run pauses here; it goes on when
    /// `answer_file` exists (`kt resume RUN --answer FILE` copies FILE there).
    #[error(
        "node `{node}` waits for a human answer: the prompt is in {}; write the answer to {} (or pass it with \
         `kt resume RUN --answer FILE`)",
        prompt_file.display(),
        answer_file.display()
    )]
    AwaitingManualAnswer {
        node: String,
        prompt_file: PathBuf,
        answer_file: PathBuf,
    },

    /// The answer stopped at the token limit, also after one re-ask with a larger limit.
    #[error(
        "node `{node}`: the answer was cut off at max_tokens = {max_tokens} (also after asking again with a larger \
         limit); raise `[llm] max_tokens` / `max_tokens_cap` or ask for a shorter answer; answer ends: {tail}"
    )]
    CutOff {
        node: String,
        max_tokens: u32,
        tail: String,
    },

    /// The `exec` provider's command failed.
    #[error("exec provider: `{command}` {status}; its stderr ends: {stderr}")]
    Command {
        command: String,
        /// `exited with status 2`, `was killed by a signal`, `could not start: ...`.
        status: String,
        stderr: String,
    },

    #[error(
        "node `{node}`: the script {} has no answer left for call {call} (neither for this node nor unlabelled); \
         add an [[answers]] entry",
        script.display()
    )]
    ScriptExhausted {
        node: String,
        call: usize,
        script: PathBuf,
    },

    #[error("LLM configuration: {detail}; {fix}")]
    Config { detail: String, fix: String },

    #[error("{}: {action}: {source}", path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
}

fn node_suffix(node: &Option<String>) -> String {
    node.as_ref()
        .map(|n| format!(" of node `{n}`"))
        .unwrap_or_default()
}

impl LlmError {
    /// Whether sending the same request again may succeed (rate limits, server errors, timeouts, dropped
    /// connections). 400/401/403 and answers that fail to parse are not retried here: repeating them is paying
    /// for the same failure.
    /// The same set as [`LlmError::is_unavailable`]: only the service's state can change between attempts.
    pub fn is_retryable(&self) -> bool {
        self.is_unavailable()
    }

    /// Whether the LLM service is unavailable rather than the request or the answer wrong: a rate limit that
    /// outlasted the retries, a timeout, a connection that failed, a server error (5xx, 408). A run that ends on
    /// one of these is an infrastructure failure worth resuming later, not a result.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Timeout { .. }
                | LlmError::Connection { .. }
        )
    }

    /// The server's requested wait before the next attempt, if it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } | LlmError::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// Records how many attempts were made, for errors that report it.
    pub(crate) fn with_attempts(mut self, n: u32) -> Self {
        match &mut self {
            LlmError::RateLimited { attempts, .. } | LlmError::Server { attempts, .. } => {
                *attempts = n
            }
            _ => {}
        }
        self
    }

    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
        source: std::io::Error,
    ) -> Self {
        LlmError::Io {
            path: path.into(),
            action,
            source,
        }
    }
}

/// At most this many characters of a body go into an error: enough to recognise the server's message,
/// short enough to keep logs readable.
const EXCERPT_CHARS: usize = 300;

/// The last [`EXCERPT_CHARS`] characters of `text`, with a marker when cut.
pub fn tail(text: &str) -> String {
    let n = text.chars().count();
    if n <= EXCERPT_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().skip(n - EXCERPT_CHARS).collect();
    format!("… {kept}")
}

/// The first [`EXCERPT_CHARS`] characters of `text`, with a marker when cut.
pub fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().count() > EXCERPT_CHARS {
        out.push_str(" …");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_are_unavailable_and_answer_problems_are_not() {
        let timeout = LlmError::Timeout {
            provider: "p".into(),
            phase: TimeoutPhase::Idle,
            after: Duration::from_secs(1),
            url: "u".into(),
        };
        assert!(timeout.is_unavailable());
        let cut = LlmError::CutOff {
            node: "n".into(),
            max_tokens: 8,
            tail: String::new(),
        };
        assert!(!cut.is_unavailable());
        let bad = LlmError::BadRequest {
            provider: "p".into(),
            status: 400,
            body: String::new(),
            hint: String::new(),
        };
        assert!(!bad.is_unavailable());
    }

    #[test]
    fn tail_keeps_the_end() {
        let long = "x".repeat(400) + "END";
        assert!(tail(&long).ends_with("END"));
        assert!(tail(&long).starts_with('…'));
        assert_eq!(tail("short"), "short");
    }
}
