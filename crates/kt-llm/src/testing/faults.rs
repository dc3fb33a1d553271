//! Behaviour of the whole client against a misbehaving server: every fault ends in success after retries or
//! in the right typed error, within the configured time.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use super::server::{FakeServer, Reply, anthropic_answer, openai_answer, openai_stream};
use crate::{
    AnthropicProvider, ApiKey, Endpoint, LlmClient, LlmError, LlmRequest, ManualProvider,
    OpenAiProvider, Recorder, ReplayProvider, RetryPolicy, StructuredMode, TimeoutPhase, Timeouts,
};

pub(super) fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(80),
        max_retry_after: Duration::from_secs(5),
    }
}

pub(super) fn short_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_millis(500),
        first_byte: Duration::from_millis(300),
        total: Duration::from_secs(3),
        idle: Duration::from_millis(300),
    }
}

pub(super) fn endpoint(server: &FakeServer) -> Endpoint {
    Endpoint {
        timeouts: short_timeouts(),
        ..Endpoint::new(server.base_url(), "gpt-4.1")
    }
}

/// An Anthropic endpoint on the fake server with the short test deadlines.
pub(super) fn anthropic_endpoint(server: &FakeServer) -> Endpoint {
    Endpoint {
        timeouts: short_timeouts(),
        ..Endpoint::new(server.base_url(), "claude-sonnet-4")
    }
}

fn openai_client(server: &FakeServer, attempts: u32) -> LlmClient {
    LlmClient::new(OpenAiProvider::new(endpoint(server)).unwrap()).with_retry(fast_retry(attempts))
}

pub(super) fn ask() -> LlmRequest {
    LlmRequest::new("test.node")
        .system("sys")
        .user("What is 6*7?")
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds() {
    let server = FakeServer::start(vec![
        Reply::status(429, r#"{"error":"slow down"}"#).with_header("retry-after", "1"),
        Reply::json(openai_answer("42", "gpt-4.1", true)),
    ])
    .await;
    let t = Instant::now();
    let r = openai_client(&server, 3).complete(ask()).await.unwrap();
    let elapsed = t.elapsed();
    assert_eq!((r.text.as_str(), r.attempts), ("42", 2));
    assert!(
        elapsed >= Duration::from_millis(950) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn rate_limit_that_persists_is_a_rate_limit_error_with_attempts() {
    let server = FakeServer::start((0..3).map(|_| Reply::status(429, "quota")).collect()).await;
    let err = openai_client(&server, 3).complete(ask()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::RateLimited { attempts: 3, .. }),
        "{err}"
    );
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let server = FakeServer::start(vec![
        Reply::status(500, "boom"),
        Reply::status(503, "overloaded"),
        Reply::json(openai_answer("ok", "gpt-4.1", true)),
    ])
    .await;
    let t = Instant::now();
    let r = openai_client(&server, 5).complete(ask()).await.unwrap();
    assert_eq!(r.attempts, 3);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[tokio::test]
async fn persistent_server_error_ends_as_server_error_with_body() {
    let server = FakeServer::start(
        (0..2)
            .map(|_| Reply::status(502, "bad gateway here"))
            .collect(),
    )
    .await;
    let err = openai_client(&server, 2).complete(ask()).await.unwrap_err();
    match &err {
        LlmError::Server {
            status: 502,
            attempts: 2,
            body,
            ..
        } => assert!(body.contains("bad gateway here")),
        other => panic!("wrong error: {other}"),
    }
}

#[tokio::test]
async fn auth_failure_and_bad_request_are_not_retried() {
    let server = FakeServer::start(vec![
        Reply::status(401, "invalid key"),
        Reply::json(openai_answer("x", "m", true)),
    ])
    .await;
    let err = openai_client(&server, 5).complete(ask()).await.unwrap_err();
    assert!(matches!(err, LlmError::Auth { status: 401, .. }), "{err}");
    assert_eq!(server.received().len(), 1);

    let server = FakeServer::start(vec![
        Reply::status(400, "unknown field"),
        Reply::json(openai_answer("x", "m", true)),
    ])
    .await;
    let err = openai_client(&server, 5).complete(ask()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::BadRequest { status: 400, .. }),
        "{err}"
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn hung_server_times_out_at_first_byte_and_the_retry_succeeds() {
    let server = FakeServer::start(vec![
        Reply::Hang(Duration::from_secs(10)),
        Reply::json(openai_answer("late but fine", "gpt-4.1", true)),
    ])
    .await;
    let t = Instant::now();
    let r = openai_client(&server, 3).complete(ask()).await.unwrap();
    assert_eq!((r.text.as_str(), r.attempts), ("late but fine", 2));
    assert!(
        t.elapsed() >= Duration::from_millis(280) && t.elapsed() < Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn server_that_always_hangs_gives_a_first_byte_timeout_error_in_time() {
    let server = FakeServer::start(
        (0..2)
            .map(|_| Reply::Hang(Duration::from_secs(10)))
            .collect(),
    )
    .await;
    let t = Instant::now();
    let err = openai_client(&server, 2).complete(ask()).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Timeout {
                phase: TimeoutPhase::FirstByte,
                ..
            }
        ),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[tokio::test]
async fn malformed_json_is_a_bad_response_without_retry() {
    let server = FakeServer::start(vec![Reply::status(200, "{\"choices\": [oops")]).await;
    let err = openai_client(&server, 3).complete(ask()).await.unwrap_err();
    assert!(matches!(err, LlmError::BadResponse { .. }), "{err}");
    assert!(err.to_string().contains("not valid JSON"));
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn refused_connection_is_a_connection_error_after_retries() {
    // Bind and drop to get a port with nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ep = Endpoint {
        timeouts: short_timeouts(),
        ..Endpoint::new(format!("http://127.0.0.1:{port}/v1"), "m")
    };
    let client = LlmClient::new(OpenAiProvider::new(ep).unwrap()).with_retry(fast_retry(2));
    let err = client.complete(ask()).await.unwrap_err();
    assert!(matches!(err, LlmError::Connection { .. }), "{err}");
}

#[tokio::test]
async fn thinking_is_stripped_from_the_answer_and_kept_as_thought() {
    let server = FakeServer::start(vec![Reply::json(openai_answer(
        "<think>6*7... 42</think>\n42",
        "gpt-4.1",
        true,
    ))])
    .await;
    let r = openai_client(&server, 1).complete(ask()).await.unwrap();
    assert_eq!(r.text, "42");
    assert_eq!(r.thought.as_deref(), Some("6*7... 42"));
    let err = r.code().unwrap_err();
    assert!(err.to_string().contains("node `test.node`"), "{err}");
}

#[tokio::test]
async fn missing_usage_is_estimated_and_flagged_and_unknown_model_has_no_cost() {
    let server = FakeServer::start(vec![
        Reply::json(openai_answer("forty-two", "my-local-model", false)),
        Reply::json(openai_answer("42", "gpt-4.1-2025-04-14", true)),
    ])
    .await;
    // Neither the configured nor the reported model of the first call is in the price table.
    let ep = Endpoint {
        model: "unpriced-model".into(),
        ..endpoint(&server)
    };
    let client = LlmClient::new(OpenAiProvider::new(ep).unwrap()).with_retry(fast_retry(1));
    let r = client.complete(ask()).await.unwrap();
    assert!(r.usage.estimated);
    assert!(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
    assert_eq!(r.cost_usd, None);
    let r = client
        .complete(LlmRequest::new("other").user("q"))
        .await
        .unwrap();
    assert!(!r.usage.estimated);
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (11, 7));
    let cost = r.cost_usd.unwrap();
    assert!(
        (cost - (11.0 * 2.0 + 7.0 * 8.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    let totals = client.totals();
    assert_eq!(totals.run.calls, 2);
    assert_eq!(totals.run.known_cost(), None);
    assert_eq!(totals.per_node["other"].known_cost(), Some(cost));
}

#[tokio::test]
async fn parameters_key_and_extra_headers_reach_the_server() {
    let server = FakeServer::start(vec![Reply::json(openai_answer("ok", "gpt-4.1", true))]).await;
    let mut ep = endpoint(&server);
    ep.api_key = Some(ApiKey::new("sk-abc"));
    ep.extra_headers.insert("x-team".into(), "kt".into());
    let client = LlmClient::new(OpenAiProvider::new(ep).unwrap()).with_defaults(crate::Params {
        temperature: Some(0.3),
        max_tokens: Some(100),
        ..Default::default()
    });
    client
        .complete(ask().seed(7).temperature(0.0))
        .await
        .unwrap();
    let got = &server.received()[0];
    assert_eq!(got.path, "/v1/chat/completions");
    assert_eq!(got.header("authorization"), Some("Bearer sk-abc"));
    assert_eq!(got.header("x-team"), Some("kt"));
    assert_eq!(got.body["temperature"], 0.0);
    assert_eq!(
        (got.body["seed"].as_u64(), got.body["max_tokens"].as_u64()),
        (Some(7), Some(100))
    );
    assert_eq!(got.body["messages"][0]["role"], "system");
}

#[tokio::test]
async fn slow_stream_within_the_idle_limit_is_assembled() {
    let server = FakeServer::start(vec![Reply::Sse {
        events: openai_stream(&["<think>hm</think>", "4", "2"]),
        gap: Duration::from_millis(60),
    }])
    .await;
    let ep = Endpoint {
        stream: true,
        ..endpoint(&server)
    };
    let r = LlmClient::new(OpenAiProvider::new(ep).unwrap())
        .complete(ask())
        .await
        .unwrap();
    assert_eq!((r.text.as_str(), r.thought.as_deref()), ("42", Some("hm")));
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.usage.estimated
        ),
        (5, 3, false)
    );
    assert_eq!(server.received()[0].body["stream"], true);
}

#[tokio::test]
async fn stalled_stream_is_an_idle_timeout() {
    let server = FakeServer::start(vec![Reply::Sse {
        events: openai_stream(&["a", "b"]),
        gap: Duration::from_secs(3),
    }])
    .await;
    let ep = Endpoint {
        stream: true,
        ..endpoint(&server)
    };
    let t = Instant::now();
    let err = LlmClient::new(OpenAiProvider::new(ep).unwrap())
        .with_retry(fast_retry(1))
        .complete(ask())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Timeout {
                phase: TimeoutPhase::Idle,
                ..
            }
        ),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[tokio::test]
async fn anthropic_sends_its_headers_and_system_field_and_reads_usage() {
    let server =
        FakeServer::start(vec![Reply::json(anthropic_answer("<think>x</think>hello"))]).await;
    let mut ep = anthropic_endpoint(&server);
    ep.api_key = Some(ApiKey::new("ak-1"));
    let r = LlmClient::new(AnthropicProvider::new(ep).unwrap())
        .complete(ask())
        .await
        .unwrap();
    assert_eq!(
        (r.text.as_str(), r.usage.input_tokens, r.usage.output_tokens),
        ("hello", 20, 4)
    );
    assert!(
        r.cost_usd.is_some(),
        "claude-sonnet-4 is in the price table"
    );
    let got = &server.received()[0];
    assert_eq!(got.path, "/v1/messages");
    assert_eq!(got.header("x-api-key"), Some("ak-1"));
    assert_eq!(
        got.header("anthropic-version"),
        Some(crate::providers::ANTHROPIC_VERSION)
    );
    assert_eq!(got.body["system"], "sys");
}

#[derive(Debug, Deserialize, schemars::JsonSchema, PartialEq)]
pub(super) struct Answer {
    pub value: u32,
    pub unit: String,
}

#[tokio::test]
async fn native_structured_output_sends_the_schema_and_parses_the_type() {
    let server = FakeServer::start(vec![Reply::json(openai_answer(
        "<think>easy</think>```json\n{\"value\": 42, \"unit\": \"apples\"}\n```",
        "gpt-4.1",
        true,
    ))])
    .await;
    let (a, r) = openai_client(&server, 1)
        .structured::<Answer>(ask(), StructuredMode::Native)
        .await
        .unwrap();
    assert_eq!(
        a,
        Answer {
            value: 42,
            unit: "apples".into()
        }
    );
    assert_eq!(r.thought.as_deref(), Some("easy"));
    let body = &server.received()[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert!(body["response_format"]["json_schema"]["schema"]["properties"]["value"].is_object());
}

#[tokio::test]
async fn anthropic_structured_output_is_a_forced_tool_call() {
    let server = FakeServer::start(vec![Reply::json(json!({
        "content": [{"type": "tool_use", "name": "Answer", "input": {"value": 7, "unit": "kg"}}],
        "usage": {"input_tokens": 1, "output_tokens": 1}, "model": "claude-sonnet-4"}))])
    .await;
    let ep = anthropic_endpoint(&server);
    let client = LlmClient::new(AnthropicProvider::new(ep).unwrap());
    let (a, _) = client
        .structured::<Answer>(ask(), StructuredMode::Native)
        .await
        .unwrap();
    assert_eq!(a.value, 7);
    assert_eq!(server.received()[0].body["tool_choice"]["type"], "tool");
}

#[tokio::test]
async fn unparsable_answer_is_asked_again_with_the_parse_error() {
    let server = FakeServer::start(vec![
        Reply::json(openai_answer("{\"value\": \"many\"}", "gpt-4.1", true)),
        Reply::json(openai_answer(
            "{\"value\": 3, \"unit\": \"m\"}",
            "gpt-4.1",
            true,
        )),
    ])
    .await;
    let client = openai_client(&server, 1);
    let (a, r) = client
        .structured::<Answer>(ask(), StructuredMode::Native)
        .await
        .unwrap();
    assert_eq!(a.value, 3);
    assert_eq!(r.attempts, 2);
    assert_eq!(
        (r.usage.input_tokens, r.usage.output_tokens),
        (22, 14),
        "usage summed over both calls"
    );
    let second = &server.received()[1].body["messages"];
    let last = second.as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        last.contains("could not be parsed") && last.contains("invalid type"),
        "{last}"
    );
}

#[tokio::test]
async fn answer_that_never_parses_is_a_schema_mismatch_naming_the_node() {
    let server = FakeServer::start(
        (0..3)
            .map(|_| Reply::json(openai_answer("no idea", "gpt-4.1", true)))
            .collect(),
    )
    .await;
    let err = openai_client(&server, 1)
        .with_parse_retries(2)
        .structured::<Answer>(ask(), StructuredMode::Native)
        .await
        .unwrap_err();
    match &err {
        LlmError::SchemaMismatch {
            node,
            attempts: 3,
            excerpt,
            ..
        } => {
            assert_eq!(node, "test.node");
            assert_eq!(excerpt, "no idea");
        }
        other => panic!("wrong error: {other}"),
    }
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn separate_mode_answers_freely_then_converts() {
    let server = FakeServer::start(vec![
        Reply::json(openai_answer("It is 42 apples.", "gpt-4.1", true)),
        Reply::json(openai_answer(
            "{\"value\": 42, \"unit\": \"apples\"}",
            "gpt-4.1",
            true,
        )),
    ])
    .await;
    let (a, _) = openai_client(&server, 1)
        .structured::<Answer>(ask(), StructuredMode::Separate)
        .await
        .unwrap();
    assert_eq!(a.value, 42);
    let got = server.received();
    assert!(got[0].body.get("response_format").is_none());
    assert!(
        got[1].body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("It is 42 apples.")
    );
    assert!(got[1].body.get("response_format").is_some());
}

#[tokio::test]
async fn hybrid_mode_thinks_then_answers_constrained_in_the_same_conversation() {
    let server = FakeServer::start(vec![
        Reply::json(openai_answer("Six times seven is 42.", "gpt-4.1", true)),
        Reply::json(openai_answer(
            "{\"value\": 42, \"unit\": \"none\"}",
            "gpt-4.1",
            true,
        )),
    ])
    .await;
    let (a, r) = openai_client(&server, 1)
        .structured::<Answer>(ask(), StructuredMode::Hybrid)
        .await
        .unwrap();
    assert_eq!(a.value, 42);
    assert_eq!(r.attempts, 2);
    let msgs = server.received()[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["content"], "Six times seven is 42.");
    assert!(server.received()[0].body.get("response_format").is_none());
}

#[tokio::test]
async fn recorded_run_replays_without_the_server_and_never_contains_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run/llm.jsonl");
    let secret = "sk-live-DO-NOT-LEAK-123456";
    let server = FakeServer::start(vec![
        Reply::json(openai_answer("<think>t</think>first", "gpt-4.1", true)),
        Reply::status(401, "bad key sk-live-DO-NOT-LEAK-123456"),
        Reply::json(openai_answer("second", "gpt-4.1", true)),
    ])
    .await;
    let mut ep = endpoint(&server);
    ep.api_key = Some(ApiKey::new(secret));
    let client = LlmClient::new(OpenAiProvider::new(ep).unwrap())
        .with_retry(fast_retry(2))
        .with_recorder(Recorder::open(&cassette).unwrap());
    let q1 = LlmRequest::new("a").user("one");
    let q2 = LlmRequest::new("b").user("two");
    client.complete(q1.clone()).await.unwrap();
    client.complete(q2.clone()).await.unwrap_err();
    client.complete(q2.clone()).await.unwrap();

    let text = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains(secret), "API key written to the record");
    assert!(
        !text.contains("sk-live"),
        "part of the API key written to the record"
    );
    let first: crate::Record = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (first.answer.as_deref(), first.thought.as_deref()),
        (Some("first"), Some("t"))
    );
    assert_eq!(
        (
            first.node.as_str(),
            first.provider.as_str(),
            first.model.as_str()
        ),
        ("a", "openai", "gpt-4.1")
    );

    drop(server);
    let replay = LlmClient::new(ReplayProvider::open(&cassette).unwrap());
    let r1 = replay.complete(q1).await.unwrap();
    assert_eq!(
        (
            r1.text.as_str(),
            r1.thought.as_deref(),
            r1.usage.input_tokens
        ),
        ("first", Some("t"), 11)
    );
    assert_eq!(r1.cost_usd, Some(0.0), "a replayed call costs nothing");
    assert_eq!(replay.complete(q2).await.unwrap().text, "second");
    let err = replay
        .complete(LlmRequest::new("a").user("changed prompt"))
        .await
        .unwrap_err();
    match &err {
        LlmError::ReplayMiss { node, hint, .. } => {
            assert_eq!(node, "a");
            assert!(hint.contains("changed since the recording"), "{hint}");
        }
        other => panic!("wrong error: {other}"),
    }
}

#[tokio::test]
async fn manual_provider_pauses_on_the_prompt_and_the_answer_file_resumes_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let client = LlmClient::new(ManualProvider::new(dir.path().join("prompts")));
    let ask = || LlmRequest::new("stage2/generate").user("Write a generator.");
    let err = client.complete(ask()).await.unwrap_err();
    let LlmError::AwaitingManualAnswer {
        node,
        prompt_file,
        answer_file,
    } = err
    else {
        panic!("wrong error: {err}")
    };
    assert_eq!(node, "stage2/generate");
    assert!(err_text_names(&prompt_file, &answer_file));
    assert!(
        std::fs::read_to_string(&prompt_file)
            .unwrap()
            .contains("Write a generator.")
    );

    std::fs::write(&answer_file, "```cuda\n__global__ void k() {}\n```\n").unwrap();
    // A new client, as after a restart: the answer is found by the request alone.
    let resumed = LlmClient::new(ManualProvider::new(dir.path().join("prompts")));
    let r = resumed.complete(ask()).await.unwrap();
    assert_eq!(r.code().unwrap(), "__global__ void k() {}\n");
    assert_eq!((r.provider.as_str(), r.cost_usd), ("manual", Some(0.0)));
}

fn err_text_names(prompt: &std::path::Path, answer: &std::path::Path) -> bool {
    let err = LlmError::AwaitingManualAnswer {
        node: "n".into(),
        prompt_file: prompt.to_path_buf(),
        answer_file: answer.to_path_buf(),
    };
    let text = err.to_string();
    text.contains(&prompt.display().to_string()) && text.contains("--answer")
}

#[tokio::test]
async fn injected_answer_file_answers_the_next_call_of_its_node_with_any_provider() {
    let server = FakeServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let answer = dir.path().join("answer.md");
    std::fs::write(&answer, "by hand").unwrap();
    let client = openai_client(&server, 1);
    client.inject_answer("test.node", &answer);
    let r = client.complete(ask()).await.unwrap();
    assert_eq!(
        (r.text.as_str(), r.provider.as_str()),
        ("by hand", "manual")
    );
    assert!(server.received().is_empty(), "the server was not asked");
}

#[tokio::test]
async fn retry_after_on_a_503_is_honoured_too() {
    let server = FakeServer::start(vec![
        Reply::status(503, "busy").with_header("retry-after", "0.4"),
        Reply::json(openai_answer("ok", "gpt-4.1", true)),
    ])
    .await;
    let t = Instant::now();
    let r = openai_client(&server, 2).complete(ask()).await.unwrap();
    assert_eq!(r.attempts, 2);
    assert!(
        t.elapsed() >= Duration::from_millis(380),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn anthropic_overloaded_529_is_retried() {
    let server = FakeServer::start(vec![
        Reply::status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
        ),
        Reply::json(anthropic_answer("fine")),
    ])
    .await;
    let ep = anthropic_endpoint(&server);
    let r = LlmClient::new(AnthropicProvider::new(ep).unwrap())
        .with_retry(fast_retry(3))
        .complete(ask())
        .await
        .unwrap();
    assert_eq!((r.text.as_str(), r.attempts), ("fine", 2));
}

#[tokio::test]
async fn stream_cut_short_is_retried_instead_of_returning_half_an_answer() {
    let mut cut = openai_stream(&["half an", " answer"]);
    cut.truncate(1);
    let server = FakeServer::start(vec![
        Reply::Sse {
            events: cut,
            gap: Duration::ZERO,
        },
        Reply::Sse {
            events: openai_stream(&["whole"]),
            gap: Duration::ZERO,
        },
    ])
    .await;
    let ep = Endpoint {
        stream: true,
        ..endpoint(&server)
    };
    let r = LlmClient::new(OpenAiProvider::new(ep).unwrap())
        .with_retry(fast_retry(2))
        .complete(ask())
        .await
        .unwrap();
    assert_eq!((r.text.as_str(), r.attempts), ("whole", 2));
}

#[tokio::test]
async fn local_server_reporting_its_file_name_is_priced_by_the_configured_model() {
    let server = FakeServer::start(vec![Reply::json(openai_answer(
        "hi",
        "gemma-3-270m-q4_k_m.gguf",
        true,
    ))])
    .await;
    let ep = Endpoint {
        model: "local".into(),
        ..endpoint(&server)
    };
    let r = LlmClient::new(OpenAiProvider::new(ep).unwrap())
        .complete(ask())
        .await
        .unwrap();
    assert_eq!(r.model, "gemma-3-270m-q4_k_m.gguf");
    assert_eq!(r.cost_usd, Some(0.0));
}
