//! Answers and prompts past kt's size caps end in a clear error, early and without retries.

use super::faults::{endpoint, fast_retry};
use super::server::{FakeServer, Reply, openai_answer};
use crate::{LlmClient, LlmError, LlmRequest, OpenAiProvider};

fn client(server: &FakeServer) -> LlmClient {
    LlmClient::new(OpenAiProvider::new(endpoint(server)).unwrap()).with_retry(fast_retry(3))
}

#[tokio::test]
async fn an_answer_past_the_cap_is_refused_and_not_asked_again() {
    let huge = "x".repeat((crate::transport::MAX_ANSWER_BYTES + 1024) as usize);
    let server = FakeServer::start(vec![Reply::json(openai_answer(&huge, "gpt-4.1", true))]).await;
    let request = LlmRequest::new("test.node").user("What is 6*7?");
    let err = client(&server).complete(request).await.unwrap_err();
    assert!(
        matches!(err, LlmError::TooLarge { what: "answer", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("larger than the"), "{err}");
    assert_eq!(
        server.received().len(),
        1,
        "a too-large answer is not retried"
    );
}

#[tokio::test]
async fn a_prompt_past_the_cap_is_refused_before_anything_is_sent() {
    let server = FakeServer::start(vec![Reply::json(openai_answer("42", "gpt-4.1", true))]).await;
    let prompt = "y".repeat((crate::transport::MAX_PROMPT_BYTES + 1) as usize);
    let err = client(&server)
        .complete(LlmRequest::new("test.node").user(&prompt))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::TooLarge { what: "prompt", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("smaller kernel file"), "{err}");
    assert!(server.received().is_empty());
}
