//! The one trait every LLM backend implements. A provider makes exactly one attempt; retries, thinking
//! removal, pricing and recording are the client's job, so each provider stays a translation of one wire format.

use async_trait::async_trait;

use crate::error::LlmError;
use crate::request::LlmRequest;
use crate::response::ProviderReply;

/// One attempt of one call, as the client hands it to a provider.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The request with the client's default parameters filled in.
    pub request: &'a LlmRequest,
    /// [`LlmRequest::stable_hash`] of the request as the caller wrote it (replay keys on this).
    pub hash: &'a str,
    /// 1 for the first attempt.
    pub attempt: u32,
}

#[async_trait]
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// Short name for records and messages: `openai`, `anthropic`, `scripted`, `replay`, `manual`.
    fn name(&self) -> &str;
    /// The model used when a request does not name one.
    fn model(&self) -> &str;
    /// Whether the provider constrains output to [`LlmRequest::schema`] itself. When false, the client puts the
    /// schema into the prompt instead.
    fn native_schema(&self) -> bool {
        false
    }
    /// Whether calls are paid for. Scripted, replayed and human answers cost nothing, whatever model name
    /// they carry, so their cost is zero rather than unknown.
    fn billed(&self) -> bool {
        true
    }
    /// The token limit the provider sends when a request sets none, if it sends one (Anthropic must); used to
    /// size the re-ask of an answer that was cut off.
    fn default_max_tokens(&self) -> Option<u32> {
        None
    }
    /// Makes one attempt.
    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError>;
}
