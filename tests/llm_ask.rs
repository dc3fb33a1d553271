//! End-to-end tests of `kt llm ask` through the real binary, with the file-based providers (no network).

#![allow(clippy::unwrap_used)] // a failed unwrap in a test is a failed test with its message

use std::path::Path;
use std::process::Output;

mod support;
use support::{kt_command, output, text};

/// Runs kt in `dir` (where the tests write their answer scripts and kt.toml), with `dir` as its home.
fn kt(dir: &Path, args: &[&str]) -> Output {
    output(kt_command(dir).current_dir(dir).args(args))
}

#[test]
fn scripted_answer_is_printed_recorded_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("answers.toml"),
        "[[answers]]\nnode = \"ask\"\ntext = \"<think>hmm</think>forty-two\"\n",
    )
    .unwrap();
    let out = kt(
        dir.path(),
        &[
            "llm",
            "ask",
            "--llm",
            "scripted:answers.toml",
            "--record",
            "run/llm.jsonl",
            "6*7?",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "forty-two");
    assert!(
        text(&out.stderr).contains("tokens in"),
        "usage line missing: {}",
        text(&out.stderr)
    );

    let out = kt(
        dir.path(),
        &[
            "llm",
            "ask",
            "--llm",
            "replay:run/llm.jsonl",
            "--json",
            "6*7?",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(
        (v["answer"].as_str(), v["thought"].as_str()),
        (Some("forty-two"), Some("hmm"))
    );

    let out = kt(
        dir.path(),
        &[
            "llm",
            "ask",
            "--llm",
            "replay:run/llm.jsonl",
            "another question",
        ],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no recorded answer"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn kt_toml_configures_the_provider_and_json_schema_gives_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kt.toml"),
        "[llm]\nprovider = \"scripted\"\npath = \"a.json\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a.json"),
        r#"{"answers": [{"text": "```json\n{\"n\": 42}\n```"}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("schema.json"),
        r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#,
    )
    .unwrap();
    let out = kt(
        dir.path(),
        &["llm", "ask", "--json-schema", "schema.json", "n?"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["n"], 42);
}

#[test]
fn missing_configuration_says_how_to_configure() {
    let dir = tempfile::tempdir().unwrap();
    let out = kt(dir.path(), &["llm", "ask", "hi"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("kt.toml"),
        "{}",
        text(&out.stderr)
    );
}

/// An OpenAI-compatible server on 127.0.0.1 that does not stream: every request, streamed or not, gets one
/// JSON chat completion answering `text`. Serves for at most 60 s; returns its port and each request's body.
fn non_streaming_server(text: &'static str) -> (u16, std::sync::mpsc::Receiver<serde_json::Value>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            // Reads the head, then the body its content-length announces.
            let body = loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break Vec::new();
                }
                got.extend_from_slice(&buf[..n]);
                let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if got.len() >= end + 4 + len {
                    break got[end + 4..end + 4 + len].to_vec();
                }
            };
            let _ = tx.send(serde_json::from_slice(&body).unwrap_or_default());
            let answer = serde_json::json!({"id": "x", "model": "gpt-4.1", "choices": [{"index": 0,
                "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
            .to_string();
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                )
                .as_bytes(),
            );
            if std::time::Instant::now() > until {
                break;
            }
        }
    });
    (port, rx)
}

#[test]
fn a_server_that_does_not_stream_answers_at_once_and_kt_llm_base_url_holds_with_llm() {
    let dir = tempfile::tempdir().unwrap();
    let (port, requests) = non_streaming_server("forty-two");
    let started = std::time::Instant::now();
    let out = output(
        kt_command(dir.path())
            .current_dir(dir.path())
            .env("KT_LLM_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
            .args(["llm", "ask", "--llm", "openai:gpt-4.1", "6*7?"]),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "forty-two");
    let first = requests
        .try_recv()
        .expect("the request went to KT_LLM_BASE_URL");
    assert_eq!(first["stream"], true, "streamed by default: {first}");
    assert!(
        requests.try_recv().is_err(),
        "answered at the first attempt"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));

    // `kt analyze` takes --no-stream like every command that asks an LLM.
    let out = output(
        kt_command(dir.path())
            .env("KT_LLM_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
            .args([
                "analyze",
                "naive-kernels/vectorAdd.cu",
                "--llm",
                "openai:gpt-4.1",
                "--no-stream",
                "--attempts",
                "1",
            ]),
    );
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("unexpected argument"), "{stderr}");
    let asked = requests
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("kt analyze asked the server");
    assert!(asked.get("stream").is_none(), "--no-stream: {asked}");
}
