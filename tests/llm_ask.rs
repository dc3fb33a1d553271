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
