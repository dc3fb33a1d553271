//! [`LlmClient`]: one reliable call. It wraps a [`Provider`] with retries (backoff, `Retry-After`), thinking
//! removal, token and cost accounting, and the run record. Cheap to clone: clones share totals and record.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::LlmError;
use crate::price::PriceTable;
use crate::provider::{Call, Provider};
use crate::providers::json_instruction;
use crate::recorder::{Record, Recorder, now_rfc3339};
use crate::request::{LlmRequest, Params, Role};
use crate::response::{LlmResponse, ProviderReply};
use crate::retry::RetryPolicy;
use crate::thinking::ThinkTags;
use crate::usage::{Usage, UsageTotals};

/// Default number of times a structured answer that fails to parse is asked for again.
pub const DEFAULT_PARSE_RETRIES: u32 = 2;

#[derive(Debug, Clone)]
pub struct LlmClient {
    provider: Arc<dyn Provider>,
    defaults: Params,
    retry: RetryPolicy,
    think: ThinkTags,
    prices: Arc<PriceTable>,
    recorder: Option<Recorder>,
    totals: Arc<Mutex<UsageTotals>>,
    /// Human answers waiting for their node (see [`LlmClient::inject_answer`]).
    injected: Arc<Mutex<HashMap<String, PathBuf>>>,
    pub(crate) parse_retries: u32,
}

impl LlmClient {
    /// A client with default retries, the built-in price table, default think tags and no record.
    pub fn new(provider: impl Provider + 'static) -> Self {
        Self::from_arc(Arc::new(provider))
    }

    pub fn from_arc(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            defaults: Params::default(),
            retry: RetryPolicy::default(),
            think: ThinkTags::default(),
            prices: Arc::new(PriceTable::builtin()),
            recorder: None,
            totals: Arc::new(Mutex::new(UsageTotals::default())),
            injected: Arc::new(Mutex::new(HashMap::new())),
            parse_retries: DEFAULT_PARSE_RETRIES,
        }
    }

    /// Parameters used where a request leaves one unset.
    pub fn with_defaults(mut self, params: Params) -> Self {
        self.defaults = params;
        self
    }
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
    pub fn with_think_tags(mut self, tags: ThinkTags) -> Self {
        self.think = tags;
        self
    }
    pub fn with_prices(mut self, prices: PriceTable) -> Self {
        self.prices = Arc::new(prices);
        self
    }
    /// Appends every call to `recorder`'s file.
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }
    /// How often a structured answer that fails to parse is asked for again.
    pub fn with_parse_retries(mut self, n: u32) -> Self {
        self.parse_retries = n;
        self
    }

    pub fn provider_name(&self) -> &str {
        self.provider.name()
    }
    pub fn model(&self) -> &str {
        self.provider.model()
    }

    /// Usage so far, per node and in all.
    pub fn totals(&self) -> UsageTotals {
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Makes the next call of `node` answer with the contents of `answer_file` instead of asking the provider:
    /// how a human's answer reaches a node that stopped with [`LlmError::NeedsHumanAnswer`].
    pub fn inject_answer(&self, node: impl Into<String>, answer_file: impl Into<PathBuf>) {
        self.injected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(node.into(), answer_file.into());
    }

    /// Asks once, retrying transient failures. The answer's thinking is split off into
    /// [`LlmResponse::thought`]. Every outcome, success or not, is recorded if a recorder is attached.
    pub async fn complete(&self, request: LlmRequest) -> Result<LlmResponse, LlmError> {
        let hash = request.stable_hash();
        let mut sent = request.clone();
        sent.params = request.params.or(&self.defaults);
        if let Some(instruction) = sent.schema.as_ref().map(json_instruction)
            && !self.provider.native_schema()
        {
            append_to_last_user(&mut sent, &instruction);
        }
        let started = Instant::now();
        let injected = self
            .injected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&request.node);
        let (reply, attempts, provider) = match injected {
            Some(path) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| LlmError::io(&path, "reading the human answer", e))?;
                (
                    ProviderReply {
                        text,
                        ..ProviderReply::default()
                    },
                    1,
                    "manual".to_string(),
                )
            }
            None => match self.send_with_retries(&sent, &hash).await {
                Ok((reply, attempts)) => (reply, attempts, self.provider.name().to_string()),
                Err((err, attempts)) => {
                    self.record_failure(&sent, &hash, started.elapsed(), attempts, &err);
                    return Err(err);
                }
            },
        };
        let elapsed = started.elapsed();
        let stripped = self.think.strip(&reply.text);
        let thought = match (reply.thought, stripped.thought) {
            (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
            (a, b) => a.or(b),
        };
        let usage = reply
            .usage
            .unwrap_or_else(|| Usage::estimate(sent.prompt_chars(), reply.text.chars().count()));
        let asked = sent
            .model
            .clone()
            .unwrap_or_else(|| self.provider.model().to_string());
        let model = reply.model.unwrap_or_else(|| asked.clone());
        // The server's name is the more precise one (a dated version); a local server reports its file name,
        // so the name the user configured (e.g. "local") is the fallback for the price.
        let cost_usd = if !self.provider.billed() || provider == "manual" {
            Some(0.0)
        } else {
            self.prices
                .cost(&model, &usage)
                .or_else(|| self.prices.cost(&asked, &usage))
        };
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(&sent.node, &usage, cost_usd, elapsed);
        let response = LlmResponse {
            text: stripped.answer,
            thought,
            usage,
            cost_usd,
            elapsed,
            node: sent.node.clone(),
            provider,
            model,
            attempts,
            finish_reason: reply.finish_reason,
            request_hash: hash,
        };
        self.record_success(&sent, &response);
        Ok(response)
    }

    async fn send_with_retries(
        &self,
        sent: &LlmRequest,
        hash: &str,
    ) -> Result<(ProviderReply, u32), (LlmError, u32)> {
        let mut attempt = 1;
        loop {
            match self
                .provider
                .send(Call {
                    request: sent,
                    hash,
                    attempt,
                })
                .await
            {
                Ok(reply) => return Ok((reply, attempt)),
                Err(err) => match self.retry.delay_after(attempt, &err) {
                    Some(wait) => {
                        tracing::warn!(node = %sent.node, attempt, wait_ms = wait.as_millis() as u64, error = %err, "LLM call failed; retrying");
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    None => return Err((err.with_attempts(attempt), attempt)),
                },
            }
        }
    }

    fn record_success(&self, sent: &LlmRequest, r: &LlmResponse) {
        self.write_record(Record {
            time: now_rfc3339(),
            node: r.node.clone(),
            provider: r.provider.clone(),
            model: r.model.clone(),
            request_hash: r.request_hash.clone(),
            messages: sent.messages.clone(),
            params: sent.params.clone(),
            schema: sent.schema.clone(),
            answer: Some(r.text.clone()),
            thought: r.thought.clone(),
            usage: Some(r.usage),
            cost_usd: r.cost_usd,
            elapsed_ms: r.elapsed.as_millis() as u64,
            attempts: r.attempts,
            finish_reason: r.finish_reason.clone(),
            error: None,
        });
    }

    fn record_failure(
        &self,
        sent: &LlmRequest,
        hash: &str,
        elapsed: Duration,
        attempts: u32,
        err: &LlmError,
    ) {
        self.write_record(Record {
            time: now_rfc3339(),
            node: sent.node.clone(),
            provider: self.provider.name().to_string(),
            model: sent
                .model
                .clone()
                .unwrap_or_else(|| self.provider.model().to_string()),
            request_hash: hash.to_string(),
            messages: sent.messages.clone(),
            params: sent.params.clone(),
            schema: sent.schema.clone(),
            answer: None,
            thought: None,
            usage: None,
            cost_usd: None,
            elapsed_ms: elapsed.as_millis() as u64,
            attempts,
            finish_reason: None,
            error: Some(err.to_string()),
        });
    }

    fn write_record(&self, record: Record) {
        if let Some(rec) = &self.recorder
            && let Err(e) = rec.append(&record)
        {
            // Losing a record line must not fail the run that already paid for the call.
            tracing::error!(error = %e, "could not append to the LLM record");
        }
    }
}

/// Adds `text` to the last user message (or a new one), where every chat template expects instructions.
pub(crate) fn append_to_last_user(request: &mut LlmRequest, text: &str) {
    match request
        .messages
        .iter_mut()
        .rev()
        .find(|m| m.role == Role::User)
    {
        Some(m) => {
            m.content.push_str("\n\n");
            m.content.push_str(text);
        }
        None => request.messages.push(crate::request::Message::user(text)),
    }
}
