//! OpenAI-compatible and Anthropic servers that do not stream: a streamed request answered with one JSON body
//! (typed as JSON, or as anything else) is read as the answer at the first attempt, and later requests of the
//! same client ask for whole answers.

use super::faults::{anthropic_endpoint, ask, endpoint, fast_retry};
use super::server::{FakeServer, Reply, anthropic_answer, openai_answer};
use crate::{AnthropicProvider, Endpoint, LlmClient, OpenAiProvider};

fn streaming_openai(server: &FakeServer) -> LlmClient {
    let ep = Endpoint {
        stream: true,
        ..endpoint(server)
    };
    LlmClient::new(OpenAiProvider::new(ep).unwrap()).with_retry(fast_retry(4))
}

#[tokio::test]
async fn a_json_answer_to_a_streamed_request_is_used_and_later_requests_are_not_streamed() {
    let server = FakeServer::start(vec![
        Reply::json(openai_answer("whole", "gpt-4.1", true)),
        Reply::json(openai_answer("again", "gpt-4.1", true)),
    ])
    .await;
    let client = streaming_openai(&server);
    let first = client.complete(ask()).await.unwrap();
    assert_eq!((first.text.as_str(), first.attempts), ("whole", 1));
    assert!(!first.usage.estimated, "the body's usage is read");
    let second = client.complete(ask()).await.unwrap();
    assert_eq!((second.text.as_str(), second.attempts), ("again", 1));
    let got = server.received();
    assert_eq!(got.len(), 2, "no retries");
    assert_eq!(got[0].body["stream"], true);
    assert!(
        got[1].body.get("stream").is_none(),
        "the client remembers: {}",
        got[1].body
    );
}

#[tokio::test]
async fn a_whole_completion_sent_as_another_content_type_is_read_too() {
    let body = openai_answer("plain", "gpt-4.1", false).to_string();
    let server = FakeServer::start(vec![Reply::Raw {
        status: 200,
        headers: vec![("content-type", "text/plain".into())],
        body,
    }])
    .await;
    let r = streaming_openai(&server).complete(ask()).await.unwrap();
    assert_eq!((r.text.as_str(), r.attempts), ("plain", 1));
}

#[tokio::test]
async fn anthropic_answering_a_streamed_request_in_one_body_is_read() {
    let server = FakeServer::start(vec![Reply::json(anthropic_answer("whole"))]).await;
    let ep = Endpoint {
        stream: true,
        ..anthropic_endpoint(&server)
    };
    let r = LlmClient::new(AnthropicProvider::new(ep).unwrap())
        .with_retry(fast_retry(4))
        .complete(ask())
        .await
        .unwrap();
    assert_eq!((r.text.as_str(), r.attempts), ("whole", 1));
    assert_eq!(server.received()[0].body["stream"], true);
}
