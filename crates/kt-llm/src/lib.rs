//! Reliable LLM calls for kt: every stage of the pipeline asks an LLM something, and this crate makes that
//! one call dependable. Providers behind one trait ([`Provider`]): OpenAI-compatible chat completions
//! (OpenAI, Together, DeepSeek, vLLM, llama.cpp's llama-server, Ollama), Anthropic Messages (both streamed by
//! default), scripted answers from a file, replay of a recorded run, a human answering through files, and any
//! command answering on stdout. Around them the [`LlmClient`] adds timeouts (idle gap and total),
//! retries with backoff honouring `Retry-After`, thinking removal, structured output for Rust types (schemars
//! schema, lenient intake of the answer, serde parse, bounded re-asks; a fallback to the schema in the prompt
//! when a server rejects `response_format`), one re-ask of an answer cut off at `max_tokens`, token and cost
//! accounting, and an append-only record (`llm.jsonl`) that the replay provider reads back.
//!
//! It deliberately knows nothing of CUDA, prompts or the graph: callers bring the messages and a `node`
//! label; checkpointing and pausing a run on [`LlmError::AwaitingManualAnswer`], and ending it on an error
//! for which [`LlmError::is_unavailable`] holds, are the graph's business.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kt_llm::LlmError> {
//! use kt_llm::{LlmConfig, LlmRequest, Recorder, StructuredMode, extract_code};
//!
//! let (config, _file) = LlmConfig::load(std::path::Path::new("."))?;
//! let llm = config.build_client()?.with_recorder(Recorder::open("kt-runs/r1/llm.jsonl")?);
//!
//! // Free text, then the kernel out of its ```cuda block.
//! let answer = llm.complete(LlmRequest::new("apply").system("You optimise CUDA.").user("Tile this: ...")).await?;
//! let code = extract_code(&answer.text)?;
//!
//! // A typed answer.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Plan { steps: Vec<String> }
//! let (plan, _response) = llm.structured::<Plan>(LlmRequest::new("plan").user("Plan it."), StructuredMode::Native).await?;
//! println!("{} steps; so far {}", plan.steps.len(), llm.totals().run.summary());
//! # let _ = code; Ok(()) }
//! ```

// Tests may unwrap: a panic there is a failed test with its message, which is what a test should do.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod client;
mod client_setup;
mod code;
mod config;
mod config_load;
mod error;
mod fallback;
mod intake;
mod measured;
mod preset;
mod price;
mod probe;
mod provider;
mod providers;
mod recorder;
mod request;
mod response;
mod retry;
mod run_spec;
mod safe_directory;
mod structured;
#[cfg(test)]
mod testing;
mod thinking;
mod transport;
mod usage;

pub use client::{DEFAULT_MAX_TOKENS_CAP, DEFAULT_PARSE_RETRIES, LlmClient};
pub use code::{CodeBlock, code_blocks, extract_code};
pub use config::{LlmConfig, Overrides};
pub use config_load::{BASE_URL_ENV, base_url_from_env};
pub use error::{LlmError, TimeoutPhase};
pub use intake::{IntakeError, Lenient, json_block, lenient_value, parse_lenient};
pub use measured::{MEASURED_CLOSE, MEASURED_OPEN, without_measured};
pub use price::{Price, PriceTable};
pub use probe::{EndpointCheck, check_endpoint};
pub use provider::{Call, Provider};
pub use providers::{
    ANTHROPIC_VERSION, AnthropicProvider, Endpoint, ExecProvider, ManualProvider, OpenAiProvider,
    ReplayProvider, SchemaStyle, ScriptedProvider,
};
pub use recorder::{Record, Recorder, read_records};
pub use request::{LlmRequest, Message, OutputSchema, Params, Role};
pub use response::{LlmResponse, ProviderReply};
pub use retry::{RetryPolicy, parse_retry_after};
pub use structured::{StructuredMode, json_candidate};
pub use thinking::{Stripped, ThinkTags};
pub use transport::{
    ApiKey, DEFAULT_IDLE_TIMEOUT, DEFAULT_TOTAL_TIMEOUT, Timeouts, install_crypto_provider,
};
pub use usage::{Usage, UsageSum, UsageTotals};
