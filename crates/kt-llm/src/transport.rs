//! HTTP for the providers that talk to a server: one reqwest client, the three request deadlines (connect,
//! first byte, total) plus the stream idle deadline, and the mapping of HTTP statuses to typed errors.
//! API keys live in [`ApiKey`], which never prints and never serialises.

use std::collections::BTreeMap;
use std::sync::Once;
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde::{Deserialize, Serialize};

use crate::error::{LlmError, TimeoutPhase, excerpt};
use crate::retry::parse_retry_after;

/// The largest answer kt reads (a whole answer, or a whole stream of events): real answers are at most a few
/// hundred kilobytes; a runaway or hostile server is stopped here, while the bytes arrive, not after.
pub const MAX_ANSWER_BYTES: u64 = 32 << 20;
/// The largest request kt sends: a prompt built from a huge input file is refused before it costs anything.
pub const MAX_PROMPT_BYTES: u64 = 8 << 20;
/// How much of an error response's body is read (it is only shown as an excerpt).
const MAX_ERROR_BODY_BYTES: u64 = 64 << 10;

/// A secret. `Debug` shows `***`, and there is deliberately no `Serialize` or `Display`, so a key cannot end up
/// in a record, a log line or an error message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }
    /// Reads the key from environment variable `var`; `None` when unset or empty.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| Self(k.trim().to_string()))
    }
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// Request deadlines.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timeouts {
    #[serde(with = "crate::response::millis")]
    pub connect: Duration,
    /// From sending the request to receiving the response headers (a loaded server queues here).
    #[serde(with = "crate::response::millis")]
    pub first_byte: Duration,
    /// The whole attempt.
    #[serde(with = "crate::response::millis")]
    pub total: Duration,
    /// Longest silence between two chunks of a streamed answer.
    #[serde(with = "crate::response::millis")]
    pub idle: Duration,
}

/// Default limit of one attempt: reasoning models think for many minutes before they answer.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(1800);
/// Default longest silence of a streamed answer.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(180);

impl Default for Timeouts {
    /// Connect 10 s; a whole attempt 30 min; a streamed answer may be silent for 3 min at a time (this also
    /// bounds the wait for its headers). A non-streamed answer has its headers only when it is complete, so its
    /// first byte is bounded by the total alone.
    fn default() -> Self {
        Self::with_total(DEFAULT_TOTAL_TIMEOUT)
    }
}

impl Timeouts {
    /// One overall limit; the others are derived so that none is longer than it.
    pub fn with_total(total: Duration) -> Self {
        Self {
            connect: Duration::from_secs(10).min(total),
            first_byte: total,
            total,
            idle: DEFAULT_IDLE_TIMEOUT.min(total),
        }
    }

    /// How long to wait for the response headers: a streaming server sends them as soon as it starts, so
    /// there the idle limit applies too.
    pub fn headers(&self, streaming: bool) -> Duration {
        if streaming {
            self.first_byte.min(self.idle)
        } else {
            self.first_byte
        }
    }
}

/// Installs ring as rustls's crypto provider, once per process; a no-op if someone already installed one.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means another provider is installed already, which serves just as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Sends JSON requests to one server.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    provider: String,
    timeouts: Timeouts,
    /// Named in authentication errors so the user knows which variable to fix.
    key_env: String,
    /// Only to scrub it from error bodies: some servers echo the key they rejected.
    secret: Option<ApiKey>,
    headers: HeaderMap,
}

impl Transport {
    pub fn new(
        provider: &str,
        timeouts: Timeouts,
        key_env: &str,
        secret: Option<ApiKey>,
        extra_headers: &BTreeMap<String, String>,
    ) -> Result<Self, LlmError> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .build()
            .map_err(|e| LlmError::Config {
                detail: format!("cannot build the HTTP client: {e}"),
                fix: "report this as a bug".into(),
            })?;
        let mut headers = HeaderMap::new();
        for (name, value) in extra_headers {
            let bad = |what: &str| LlmError::Config {
                detail: format!("extra header `{name}` has an invalid {what}"),
                fix: "use ASCII header names and values in `[llm.headers]`".into(),
            };
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
            let v = HeaderValue::from_str(value).map_err(|_| bad("value"))?;
            headers.insert(n, v);
        }
        Ok(Self {
            client,
            provider: provider.to_string(),
            timeouts,
            key_env: key_env.to_string(),
            secret,
            headers,
        })
    }

    /// POSTs `body` and returns the parsed JSON answer.
    pub async fn post_json(
        &self,
        url: &str,
        auth: &[(&'static str, String)],
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, LlmError> {
        let work = async {
            let resp = self.send(url, auth, body, false).await?;
            let text = self.read_capped(url, resp, MAX_ANSWER_BYTES).await?;
            serde_json::from_str(&text).map_err(|e| LlmError::BadResponse {
                provider: self.provider.clone(),
                detail: format!("the answer is not valid JSON ({e})"),
                body: excerpt(&self.redact(&text)),
            })
        };
        self.within_total(url, work).await
    }

    /// POSTs `body` and feeds the `data:` payload of every server-sent event to `on_data` until it returns
    /// `true` (done) or the stream ends. Each chunk must arrive within the idle deadline. A server that does
    /// not stream and answers with one JSON body instead (`application/json`, or a body without any event)
    /// gives [`Streamed::Whole`], for the provider to read as a non-streamed answer.
    pub async fn post_sse(
        &self,
        url: &str,
        auth: &[(&'static str, String)],
        body: &serde_json::Value,
        mut on_data: impl FnMut(&str) -> Result<bool, LlmError> + Send,
    ) -> Result<Streamed, LlmError> {
        let work = async {
            let resp = self.send(url, auth, body, true).await?;
            if is_json(&resp) {
                let text = self.read_capped(url, resp, MAX_ANSWER_BYTES).await?;
                return self.whole_answer(&text);
            }
            let mut stream = resp.bytes_stream();
            let mut buf: Vec<u8> = Vec::new();
            // Everything received while no event has carried data: a JSON body sent as another type.
            let mut before_events: Vec<u8> = Vec::new();
            let mut events = 0usize;
            let mut received = 0u64;
            loop {
                let chunk = match tokio::time::timeout(self.timeouts.idle, stream.next()).await {
                    Err(_) => {
                        return Err(self.timeout(url, TimeoutPhase::Idle, self.timeouts.idle));
                    }
                    Ok(None) => break,
                    Ok(Some(chunk)) => chunk.map_err(|e| self.transport_error(url, e))?,
                };
                received += chunk.len() as u64;
                if received > MAX_ANSWER_BYTES {
                    return Err(self.too_large("answer", received, MAX_ANSWER_BYTES, false));
                }
                buf.extend_from_slice(&chunk);
                if events == 0 {
                    before_events.extend_from_slice(&chunk);
                }
                while let Some((event, rest)) = split_event(&buf) {
                    let data = event_data(&event);
                    buf = rest;
                    if let Some(data) = data {
                        events += 1;
                        if on_data(&data)? {
                            return Ok(Streamed::Events);
                        }
                    }
                }
            }
            // A last event without the blank line that should end it.
            if let Some(data) = event_data(&buf) {
                events += 1;
                on_data(&data)?;
            }
            if events == 0 {
                let text = String::from_utf8_lossy(&before_events);
                if text.trim_start().starts_with('{') {
                    return self.whole_answer(&text);
                }
            }
            Ok(Streamed::Events)
        };
        self.within_total(url, work).await
    }

    /// A whole JSON answer to a streamed request.
    fn whole_answer(&self, text: &str) -> Result<Streamed, LlmError> {
        tracing::debug!(provider = %self.provider, "the server answered a streamed request in one JSON body");
        serde_json::from_str(text)
            .map(Streamed::Whole)
            .map_err(|e| LlmError::BadResponse {
                provider: self.provider.clone(),
                detail: format!("the answer is not valid JSON ({e})"),
                body: excerpt(&self.redact(text)),
            })
    }

    /// GETs `url` with a short deadline and returns the status (for `kt doctor`).
    pub async fn get_status(
        &self,
        url: &str,
        auth: &[(&'static str, String)],
        limit: Duration,
    ) -> Result<u16, LlmError> {
        let mut req = self.client.get(url).headers(self.headers.clone());
        for (k, v) in auth {
            req = req.header(*k, v);
        }
        match tokio::time::timeout(limit, req.send()).await {
            Err(_) => Err(self.timeout(url, TimeoutPhase::FirstByte, limit)),
            Ok(Err(e)) => Err(self.transport_error(url, e)),
            Ok(Ok(resp)) => Ok(resp.status().as_u16()),
        }
    }

    /// Reads a response body, stopping with [`LlmError::TooLarge`] as soon as it passes `limit` bytes.
    async fn read_capped(
        &self,
        url: &str,
        resp: reqwest::Response,
        limit: u64,
    ) -> Result<String, LlmError> {
        if let Some(length) = resp.content_length()
            && length > limit
        {
            return Err(self.too_large("answer", length, limit, true));
        }
        let mut stream = resp.bytes_stream();
        let mut body: Vec<u8> = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.transport_error(url, e))?;
            if (body.len() + chunk.len()) as u64 > limit {
                let seen = (body.len() + chunk.len()) as u64;
                return Err(self.too_large("answer", seen, limit, false));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    fn too_large(&self, what: &'static str, bytes: u64, limit: u64, complete: bool) -> LlmError {
        LlmError::TooLarge {
            provider: self.provider.clone(),
            what,
            bytes,
            limit,
            complete,
            advice: if what == "prompt" {
                "the input it was built from is too large: give kt a smaller kernel file (without unrelated code)"
            } else {
                "the service sent far more than any answer kt asks for; check the base URL and the model"
            },
        }
    }

    async fn within_total<T>(
        &self,
        url: &str,
        work: impl Future<Output = Result<T, LlmError>>,
    ) -> Result<T, LlmError> {
        match tokio::time::timeout(self.timeouts.total, work).await {
            Ok(result) => result,
            Err(_) => Err(self.timeout(url, TimeoutPhase::Total, self.timeouts.total)),
        }
    }

    /// Sends the request and returns the response if its status is a success; otherwise the typed error.
    async fn send(
        &self,
        url: &str,
        auth: &[(&'static str, String)],
        body: &serde_json::Value,
        streaming: bool,
    ) -> Result<reqwest::Response, LlmError> {
        let size = serde_json::to_vec(body)
            .map(|b| b.len() as u64)
            .unwrap_or(0);
        if size > MAX_PROMPT_BYTES {
            return Err(self.too_large("prompt", size, MAX_PROMPT_BYTES, true));
        }
        let mut req = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .json(body);
        for (k, v) in auth {
            req = req.header(*k, v);
        }
        let started = Instant::now();
        let limit = self.timeouts.headers(streaming);
        let resp = match tokio::time::timeout(limit, req.send()).await {
            Err(_) => {
                return Err(self.timeout(url, TimeoutPhase::FirstByte, limit));
            }
            Ok(Err(e)) => return Err(self.transport_error(url, e)),
            Ok(Ok(resp)) => resp,
        };
        tracing::debug!(provider = %self.provider, status = resp.status().as_u16(), ms = started.elapsed().as_millis() as u64, "response headers");
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(resp);
        }
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        // The body of an error is small (only an excerpt is shown); if reading it fails we still have the status.
        let body = self
            .read_capped(url, resp, MAX_ERROR_BODY_BYTES)
            .await
            .unwrap_or_default();
        Err(self.status_error(status, retry_after, &body))
    }

    pub fn status_error(&self, status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
        let provider = self.provider.clone();
        let body = excerpt(&self.redact(body.trim()));
        match status {
            401 | 403 => LlmError::Auth {
                provider,
                status,
                body,
                key_env: self.key_env.clone(),
            },
            429 => LlmError::RateLimited {
                provider,
                retry_after,
                attempts: 1,
                body,
            },
            408 | 500..=599 => LlmError::Server {
                provider,
                status,
                attempts: 1,
                body,
                retry_after,
            },
            _ => {
                let hint = match status {
                    404 => "check the base URL (it usually ends in /v1) and the model name",
                    413 => {
                        "the prompt is too long for this server: shorten it or raise the server's limit"
                    }
                    400 | 422 => {
                        "check the model name and parameters; some servers reject `response_format` (kt then \
                         switches to `instruction` mode by itself) or `stream_options` (set `stream = false`)"
                    }
                    _ => "this will not succeed by retrying: fix the request or the configuration",
                };
                LlmError::BadRequest {
                    provider,
                    status,
                    body,
                    hint: hint.into(),
                }
            }
        }
    }

    /// `text` with the API key replaced by `***`.
    fn redact(&self, text: &str) -> String {
        match &self.secret {
            Some(k) if !k.expose().is_empty() => text.replace(k.expose(), "***"),
            _ => text.to_string(),
        }
    }

    fn timeout(&self, url: &str, phase: TimeoutPhase, after: Duration) -> LlmError {
        LlmError::Timeout {
            provider: self.provider.clone(),
            phase,
            after,
            url: url.to_string(),
        }
    }

    fn transport_error(&self, url: &str, e: reqwest::Error) -> LlmError {
        if e.is_connect() && e.is_timeout() {
            return self.timeout(url, TimeoutPhase::Connect, self.timeouts.connect);
        }
        if e.is_timeout() {
            return self.timeout(url, TimeoutPhase::Total, self.timeouts.total);
        }
        // reqwest's own message repeats the URL; the innermost cause says what actually went wrong
        // (refused, reset, DNS).
        let mut detail = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            detail = s.to_string();
            source = s.source();
        }
        LlmError::Connection {
            provider: self.provider.clone(),
            url: url.to_string(),
            detail,
        }
    }
}

/// How a streamed request was answered.
#[derive(Debug)]
pub(crate) enum Streamed {
    /// As server-sent events, each given to the caller.
    Events,
    /// In one JSON body: the server does not stream (read it as a non-streamed answer).
    Whole(serde_json::Value),
}

/// Whether a response is plain JSON rather than an event stream.
fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

/// Splits the first complete server-sent event (ended by a blank line) off `buf`.
fn split_event(buf: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut i = 0;
    while i < buf.len() {
        if buf[i..].starts_with(b"\n\n") {
            return Some((buf[..i].to_vec(), buf[i + 2..].to_vec()));
        }
        if buf[i..].starts_with(b"\r\n\r\n") {
            return Some((buf[..i].to_vec(), buf[i + 4..].to_vec()));
        }
        i += 1;
    }
    None
}

/// The joined `data:` lines of one event, or `None` for events without data (comments, keep-alives).
fn event_data(event: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(event);
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_debug_is_redacted() {
        let k = ApiKey::new("sk-secret");
        assert_eq!(format!("{k:?}"), "ApiKey(***)");
    }

    #[test]
    fn sse_events_split_on_blank_lines_and_join_data_lines() {
        let (ev, rest) = split_event(b"data: a\ndata: b\n\ndata: c").unwrap();
        assert_eq!(event_data(&ev).as_deref(), Some("a\nb"));
        assert_eq!(rest, b"data: c");
        assert_eq!(event_data(b": keep-alive"), None);
        let (ev, _) = split_event(b"data: x\r\n\r\n").unwrap();
        assert_eq!(event_data(&ev).as_deref(), Some("x"));
    }

    #[test]
    fn statuses_map_to_typed_errors() {
        let t = Transport::new(
            "openai",
            Timeouts::default(),
            "OPENAI_API_KEY",
            Some(ApiKey::new("sk-echoed")),
            &BTreeMap::new(),
        )
        .unwrap();
        assert!(
            !t.status_error(401, None, "bad key sk-echoed")
                .to_string()
                .contains("sk-echoed")
        );
        assert!(matches!(
            t.status_error(401, None, "no"),
            LlmError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            t.status_error(403, None, ""),
            LlmError::Auth { .. }
        ));
        assert!(matches!(
            t.status_error(429, None, ""),
            LlmError::RateLimited { .. }
        ));
        assert!(matches!(
            t.status_error(503, None, ""),
            LlmError::Server { status: 503, .. }
        ));
        assert!(matches!(
            t.status_error(400, None, ""),
            LlmError::BadRequest { status: 400, .. }
        ));
        assert!(
            t.status_error(401, None, "")
                .to_string()
                .contains("OPENAI_API_KEY")
        );
    }
}
