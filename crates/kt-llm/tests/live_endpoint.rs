//! Against a real OpenAI-compatible server (e.g. llama.cpp's `llama-server -m model.gguf --port 8080`), through
//! the public API only. Ignored by default; run it with the server's base URL in `KT_LLM_LIVE_URL`
//! (`KT_LLM_LIVE_URL=http://127.0.0.1:8080/v1 cargo test -p kt-llm --test live_endpoint -- --ignored`).

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test, with its message

use std::time::Duration;

use kt_llm::{
    Endpoint, LlmClient, LlmRequest, OpenAiProvider, Recorder, ReplayProvider, RetryPolicy,
    StructuredMode, Timeouts, check_endpoint,
};

fn live_url() -> String {
    std::env::var("KT_LLM_LIVE_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .expect("set KT_LLM_LIVE_URL=http://127.0.0.1:8080/v1 to run against a real server")
}

fn client(url: &str, stream: bool) -> LlmClient {
    let endpoint = Endpoint {
        stream,
        timeouts: Timeouts::with_total(Duration::from_secs(120)),
        ..Endpoint::new(url, "local")
    };
    LlmClient::new(OpenAiProvider::new(endpoint).unwrap()).with_retry(RetryPolicy {
        max_attempts: 2,
        ..RetryPolicy::default()
    })
}

#[tokio::test]
#[ignore = "needs a live endpoint: set KT_LLM_LIVE_URL"]
async fn real_server_answers_plain_streamed_and_structured_and_replays() {
    let url = live_url();
    let cfg = kt_llm::LlmConfig {
        provider: Some("llama-server".into()),
        base_url: Some(url.clone()),
        ..Default::default()
    };
    let check = check_endpoint(&cfg, Duration::from_secs(3)).await;
    assert!(
        matches!(check, kt_llm::EndpointCheck::Ok { .. }),
        "{check:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("llm.jsonl");
    let llm = client(&url, false).with_recorder(Recorder::open(&cassette).unwrap());
    let ask = LlmRequest::new("live.plain")
        .user("Say hello in one word.")
        .max_tokens(16)
        .seed(1)
        .temperature(0.0);
    let r = llm.complete(ask.clone()).await.unwrap();
    assert!(!r.text.is_empty(), "{r:?}");
    assert!(!r.usage.estimated, "llama-server reports usage");
    eprintln!(
        "plain: {:?} ({} in / {} out, {:?})",
        r.text, r.usage.input_tokens, r.usage.output_tokens, r.elapsed
    );

    let s = client(&url, true)
        .complete(
            LlmRequest::new("live.stream")
                .user("Count from 1 to 5.")
                .max_tokens(32)
                .temperature(0.0),
        )
        .await
        .unwrap();
    assert!(!s.text.is_empty(), "{s:?}");
    eprintln!(
        "streamed: {:?} (usage estimated: {})",
        s.text, s.usage.estimated
    );

    // Only closed choices: a tiny model fills an open string until max_tokens, which is the model's failure,
    // not the client's (the client reports it as SchemaMismatch, as it should).
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    enum Warmth {
        Warm,
        Cold,
    }
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Colour {
        warmth: Warmth,
        primary: bool,
    }
    let (c, _) = llm
        .structured::<Colour>(
            LlmRequest::new("live.json")
                .user("Is red warm, and is it a primary colour?")
                .max_tokens(64)
                .temperature(0.0),
            StructuredMode::Native,
        )
        .await
        .unwrap();
    eprintln!("structured: {c:?}");

    let replay = LlmClient::new(ReplayProvider::open(&cassette).unwrap());
    assert_eq!(replay.complete(ask).await.unwrap().text, r.text);
}
