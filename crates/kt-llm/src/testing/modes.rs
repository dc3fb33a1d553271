//! The answers and servers real models come with: a server that rejects `response_format` with a JSON schema,
//! a reasoning model that streams a long think before its answer, an answer cut off at `max_tokens`, and
//! answers that need lenient reading. Each is handled, recorded, and replayable.

use std::time::{Duration, Instant};

use super::faults::{Answer, anthropic_endpoint, ask, endpoint, fast_retry, short_timeouts};
use super::server::{
    FakeServer, Reply, openai_answer, openai_stream, openai_think_stream, rejects_json_schema,
};
use crate::providers::anthropic_stream::anthropic_events;
use crate::{
    AnthropicProvider, Endpoint, LlmClient, LlmError, OpenAiProvider, Params, Recorder,
    ReplayProvider, StructuredMode, TimeoutPhase, Timeouts, read_records,
};

fn streaming(server: &FakeServer, timeouts: Timeouts) -> LlmClient {
    let ep = Endpoint {
        stream: true,
        timeouts,
        ..endpoint(server)
    };
    LlmClient::new(OpenAiProvider::new(ep).unwrap()).with_retry(fast_retry(1))
}

#[tokio::test]
async fn server_rejecting_json_schema_switches_to_the_schema_in_the_prompt_for_good() {
    let server = FakeServer::start(vec![
        rejects_json_schema(),
        Reply::json(openai_answer(
            "{\"value\": 1, \"unit\": \"m\"}",
            "gpt-4.1",
            true,
        )),
        Reply::json(openai_answer(
            "{\"value\": 2, \"unit\": \"s\"}",
            "gpt-4.1",
            true,
        )),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("llm.jsonl");
    let client = LlmClient::new(OpenAiProvider::new(endpoint(&server)).unwrap())
        .with_retry(fast_retry(3))
        .with_recorder(Recorder::open(&record).unwrap());
    let (a, _) = client
        .structured::<Answer>(ask(), StructuredMode::Native)
        .await
        .unwrap();
    assert_eq!(a.value, 1);
    assert!(client.schema_in_prompt());
    let (b, _) = client
        .structured::<Answer>(ask(), StructuredMode::Native)
        .await
        .unwrap();
    assert_eq!(b.value, 2);

    let got = server.received();
    assert_eq!(
        got.len(),
        3,
        "the 400 is not retried as such, and asked only once"
    );
    assert!(got[0].body.get("response_format").is_some());
    for later in &got[1..] {
        assert!(later.body.get("response_format").is_none());
        let last = later.body["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            last.contains("JSON schema") && last.contains("\"unit\""),
            "{last}"
        );
    }
    let records = read_records(&record).unwrap();
    assert_eq!(records.len(), 3);
    assert!(records[0].error.is_some());
    assert!(
        records[0].notes[0].contains("rejected structured output"),
        "{:?}",
        records[0].notes
    );
    assert!(
        records[1].notes[0].contains("instruction"),
        "{:?}",
        records[1].notes
    );
}

/// A reasoning model streaming `steps` chunks of thought, then `answer`, `gap_ms` apart.
async fn think_server(steps: usize, answer: &str, gap_ms: u64) -> FakeServer {
    FakeServer::start(vec![Reply::Sse {
        events: openai_think_stream(steps, answer),
        gap: Duration::from_millis(gap_ms),
    }])
    .await
}

#[tokio::test]
async fn long_think_streamed_within_the_idle_limit_outlasts_the_old_first_byte_limit() {
    // Scaled down: the old limit was 120 s without a first byte; here the think alone takes ~2 s while no gap
    // exceeds 100 ms, against an idle limit of 400 ms and a first-byte limit of 500 ms.
    let server = think_server(20, "{\"value\": 42, \"unit\": \"ms\"}", 100).await;
    let timeouts = Timeouts {
        connect: Duration::from_millis(500),
        first_byte: Duration::from_millis(500),
        total: Duration::from_secs(10),
        idle: Duration::from_millis(400),
    };
    let t = Instant::now();
    let (a, r) = streaming(&server, timeouts)
        .structured::<Answer>(ask(), StructuredMode::Native)
        .await
        .unwrap();
    assert!(
        t.elapsed() > Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(a.value, 42);
    assert!(r.thought.unwrap().contains("Step 20"));
    assert_eq!(server.received()[0].body["stream"], true);
}

#[tokio::test]
async fn long_think_past_the_total_limit_is_a_total_timeout() {
    let server = think_server(30, "late", 50).await;
    let timeouts = Timeouts {
        total: Duration::from_millis(600),
        ..short_timeouts()
    };
    let err = streaming(&server, timeouts)
        .complete(ask())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Timeout {
                phase: TimeoutPhase::Total,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.is_unavailable());
}

fn limited(server: &FakeServer, max_tokens: u32, cap: u32) -> LlmClient {
    LlmClient::new(OpenAiProvider::new(endpoint(server)).unwrap())
        .with_retry(fast_retry(1))
        .with_defaults(Params {
            max_tokens: Some(max_tokens),
            ..Params::default()
        })
        .with_max_tokens_cap(cap)
}

const WHOLE: &str = "The whole answer, long enough to be cut in half.";

#[tokio::test]
async fn answer_cut_off_at_max_tokens_is_asked_again_with_twice_the_limit() {
    let cut = || Reply::CutUnless {
        enough: 200,
        text: WHOLE.into(),
    };
    let server = FakeServer::start(vec![cut(), cut()]).await;
    let r = limited(&server, 150, 32_768).complete(ask()).await.unwrap();
    assert_eq!(r.text, WHOLE);
    assert_eq!(r.attempts, 2);
    assert_eq!(r.usage.output_tokens, 14, "both calls are counted");
    let got = server.received();
    assert_eq!(
        (
            got[0].body["max_tokens"].as_u64(),
            got[1].body["max_tokens"].as_u64()
        ),
        (Some(150), Some(300))
    );
}

#[tokio::test]
async fn answer_still_cut_off_after_the_re_ask_is_a_cut_off_error() {
    let cut = || Reply::CutUnless {
        enough: 10_000,
        text: WHOLE.into(),
    };
    let server = FakeServer::start(vec![cut(), cut(), cut()]).await;
    let err = limited(&server, 150, 250)
        .complete(ask())
        .await
        .unwrap_err();
    match &err {
        LlmError::CutOff {
            node, max_tokens, ..
        } => assert_eq!((node.as_str(), *max_tokens), ("test.node", 250)),
        other => panic!("wrong error: {other}"),
    }
    assert!(err.to_string().contains("cut off"));
    assert!(!err.is_unavailable());
    assert_eq!(server.received().len(), 2, "one re-ask, no more");
    assert_eq!(server.received()[1].body["max_tokens"], 250, "capped");
}

#[tokio::test]
async fn cut_off_and_re_ask_are_recorded_and_replay_the_same_way() {
    let cut = || Reply::CutUnless {
        enough: 200,
        text: WHOLE.into(),
    };
    let server = FakeServer::start(vec![cut(), cut()]).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("llm.jsonl");
    limited(&server, 150, 32_768)
        .with_recorder(Recorder::open(&cassette).unwrap())
        .complete(ask())
        .await
        .unwrap();
    let records = read_records(&cassette).unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].finish_reason.as_deref(), Some("length"));
    assert!(
        records[0].notes[0].contains("max_tokens = 300"),
        "{:?}",
        records[0].notes
    );

    let replay = LlmClient::new(ReplayProvider::open(&cassette).unwrap()).with_defaults(Params {
        max_tokens: Some(150),
        ..Params::default()
    });
    assert_eq!(replay.complete(ask()).await.unwrap().text, WHOLE);
}

#[tokio::test]
async fn anthropic_streams_and_a_max_tokens_stop_is_asked_again() {
    let server = FakeServer::start(vec![
        Reply::Sse {
            events: anthropic_events("thinking...", &["half"], "max_tokens"),
            gap: Duration::from_millis(10),
        },
        Reply::Sse {
            events: anthropic_events("thinking...", &["the whole ", "answer"], "end_turn"),
            gap: Duration::from_millis(10),
        },
    ])
    .await;
    let ep = Endpoint {
        stream: true,
        ..anthropic_endpoint(&server)
    };
    let r = LlmClient::new(AnthropicProvider::new(ep).unwrap())
        .with_retry(fast_retry(1))
        .complete(ask())
        .await
        .unwrap();
    assert_eq!(
        (r.text.as_str(), r.thought.as_deref()),
        ("the whole answer", Some("thinking..."))
    );
    let got = server.received();
    assert_eq!(got[0].body["stream"], true);
    assert_eq!(
        got[1].body["max_tokens"], 16_384,
        "twice Anthropic's default"
    );
}

#[tokio::test]
async fn messy_structured_answer_is_read_and_its_repairs_recorded() {
    let messy = "Sure! Here is the result:\n```json\n{\n  // measured\n  \"value\": \"42\",\n  \"unit\": 'ms',\n}\n```";
    let server = FakeServer::start(vec![Reply::json(openai_answer(messy, "gpt-4.1", true))]).await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("llm.jsonl");
    let client = LlmClient::new(OpenAiProvider::new(endpoint(&server)).unwrap())
        .with_recorder(Recorder::open(&record).unwrap());
    let (a, r) = client
        .structured::<Answer>(ask(), StructuredMode::Native)
        .await
        .unwrap();
    assert_eq!((a.value, a.unit.as_str()), (42, "ms"));
    assert_eq!(r.attempts, 1, "no re-ask was needed");
    let records = read_records(&record).unwrap();
    assert_eq!(records[0].repairs, r.repairs);
    let all = r.repairs.join("; ");
    assert!(
        all.contains("comments")
            && all.contains("single-quoted")
            && all.contains("trailing commas"),
        "{all}"
    );
    assert!(all.contains("$.value: \"42\" read as 42"), "{all}");
}

#[tokio::test]
async fn a_text_call_with_a_schema_records_the_repairs_its_json_needs() {
    // `complete` hands the caller the raw text (a rewrite may come code-first), yet llm.jsonl still shows what
    // reading its JSON leniently repairs
    let messy = "Here it is:\n```json\n{\"value\": \"42\", \"unit\": \"ms\",}\n```";
    let server = FakeServer::start(vec![Reply::json(openai_answer(messy, "gpt-4.1", true))]).await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("llm.jsonl");
    let client = LlmClient::new(OpenAiProvider::new(endpoint(&server)).unwrap())
        .with_recorder(Recorder::open(&record).unwrap());
    let r = client
        .complete(ask().schema(crate::OutputSchema::of::<Answer>()))
        .await
        .unwrap();
    assert!(
        r.text.contains("\"42\""),
        "the text is given as it came: {}",
        r.text
    );
    let records = read_records(&record).unwrap();
    let all = records[0].repairs.join("; ");
    assert!(
        all.contains("trailing commas") && all.contains("read as 42"),
        "{all}"
    );
}

#[tokio::test]
async fn stream_without_usage_or_done_but_with_a_finish_reason_is_complete() {
    let mut events = openai_stream(&["ok"]);
    events.truncate(1);
    events.push(
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            .to_string(),
    );
    let server = FakeServer::start(vec![Reply::Sse {
        events,
        gap: Duration::ZERO,
    }])
    .await;
    let r = streaming(&server, short_timeouts())
        .complete(ask())
        .await
        .unwrap();
    assert_eq!(r.text, "ok");
    assert!(r.usage.estimated);
}
