//! A minimal HTTP/1.1 server on 127.0.0.1 for tests. Each connection takes the next scripted [`Reply`]: a JSON
//! answer in either wire format, an error status with headers, a hang, a malformed body, or a slow SSE stream.
//! One request per connection (`Connection: close`), so the order of replies is the order of attempts.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub(crate) enum Reply {
    /// A complete response.
    Raw {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Read the request, then send nothing for this long.
    Hang(Duration),
    /// A `text/event-stream` response: each item becomes `data: ITEM\n\n`, with `gap` before each.
    Sse { events: Vec<String>, gap: Duration },
    /// A server with a token limit: an OpenAI completion of `text` when the request's `max_tokens` is at least
    /// `enough`, else its first half with `finish_reason: "length"`.
    CutUnless { enough: u64, text: String },
}

impl Reply {
    pub fn json(body: serde_json::Value) -> Self {
        Reply::Raw {
            status: 200,
            headers: vec![],
            body: body.to_string(),
        }
    }
    pub fn status(status: u16, body: &str) -> Self {
        Reply::Raw {
            status,
            headers: vec![],
            body: body.to_string(),
        }
    }
    pub fn with_header(self, name: &'static str, value: &str) -> Self {
        match self {
            Reply::Raw {
                status,
                mut headers,
                body,
            } => {
                headers.push((name, value.to_string()));
                Reply::Raw {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

/// An OpenAI chat completion whose answer is `text`.
pub(crate) fn openai_answer(text: &str, model: &str, usage: bool) -> serde_json::Value {
    let mut v = json!({"id": "x", "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
    if usage {
        v["usage"] = json!({"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18});
    }
    v
}

/// An OpenAI-style 400 of a server that does not take `response_format` with a JSON schema.
pub(crate) fn rejects_json_schema() -> Reply {
    Reply::status(
        400,
        r#"{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.","type":"invalid_request_error","param":"response_format","code":null}}"#,
    )
}

/// OpenAI streaming chunks of a reasoning model: `<think>`, `steps` chunks of thought, `</think>`, then the
/// answer (split in two), a usage chunk and `[DONE]`.
pub(crate) fn openai_think_stream(steps: usize, answer: &str) -> Vec<String> {
    let mut parts: Vec<String> = vec!["<think>".into()];
    parts.extend(
        (1..=steps).map(|i| format!("Step {i}: consider the memory access pattern again. ")),
    );
    parts.push("</think>\n".into());
    let half = answer.len() / 2;
    parts.push(answer[..half].to_string());
    parts.push(answer[half..].to_string());
    openai_stream(&parts.iter().map(String::as_str).collect::<Vec<_>>())
}

/// An Anthropic message whose answer is `text`.
pub(crate) fn anthropic_answer(text: &str) -> serde_json::Value {
    json!({"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
           "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 20, "output_tokens": 4}})
}

/// OpenAI streaming chunks spelling out `parts`, then a usage chunk and `[DONE]`.
pub(crate) fn openai_stream(parts: &[&str]) -> Vec<String> {
    let mut events: Vec<String> = parts
        .iter()
        .map(|p| json!({"model": "gpt-4.1", "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]}).to_string())
        .collect();
    events.push(json!({"model": "gpt-4.1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}).to_string());
    events.push("[DONE]".to_string());
    events
}

/// What the server received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub path: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) struct FakeServer {
    pub addr: std::net::SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let rec = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let reply = queue.lock().unwrap().pop_front();
                let rec = rec.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, reply, rec).await;
                });
            }
        });
        Self {
            addr,
            received,
            task,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut stream: TcpStream,
    reply: Option<Reply>,
    rec: Arc<Mutex<Vec<Received>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.lines();
    let path = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("")
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: serde_json::Value =
        serde_json::from_slice(&buf[head_end..]).unwrap_or(serde_json::Value::Null);
    let reply = match reply {
        Some(Reply::CutUnless { enough, text }) => {
            let whole = body["max_tokens"].as_u64().unwrap_or(0) >= enough;
            let mut answer = openai_answer(
                if whole {
                    &text
                } else {
                    &text[..text.len() / 2]
                },
                "gpt-4.1",
                true,
            );
            if !whole {
                answer["choices"][0]["finish_reason"] = json!("length");
            }
            Some(Reply::json(answer))
        }
        other => other,
    };
    rec.lock().unwrap().push(Received {
        path,
        headers,
        body,
    });

    match reply
        .unwrap_or_else(|| Reply::status(500, "fake server: no reply scripted for this request"))
    {
        Reply::Raw {
            status,
            headers,
            body,
        } => {
            // JSON unless the reply names its own type.
            let typed = headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
            let mut out = format!(
                "HTTP/1.1 {status} X\r\n{}content-length: {}\r\nconnection: close\r\n",
                if typed {
                    ""
                } else {
                    "content-type: application/json\r\n"
                },
                body.len()
            );
            for (n, v) in headers {
                out.push_str(&format!("{n}: {v}\r\n"));
            }
            out.push_str("\r\n");
            out.push_str(&body);
            stream.write_all(out.as_bytes()).await?;
        }
        Reply::Hang(d) => tokio::time::sleep(d).await,
        Reply::CutUnless { .. } => unreachable!("turned into a JSON answer above"),
        Reply::Sse { events, gap } => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
                .await?;
            for e in events {
                tokio::time::sleep(gap).await;
                stream
                    .write_all(format!("data: {e}\n\n").as_bytes())
                    .await?;
                stream.flush().await?;
            }
        }
    }
    stream.shutdown().await
}
