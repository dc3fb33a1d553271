//! [`LlmClient`]: one reliable call. It wraps a [`Provider`] with retries (backoff, `Retry-After`), thinking
//! removal, the structured-output fallback, one re-ask of an answer cut off at the token limit, token and
//! cost accounting, and the run record. Cheap to clone: clones share totals, record and fallback state.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{LlmError, tail};
use crate::fallback::{SchemaFallback, is_schema_rejection, switch_message};
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

/// Default ceiling for the re-ask of a cut-off answer: the doubled `max_tokens` never exceeds it.
pub const DEFAULT_MAX_TOKENS_CAP: u32 = 32_768;

/// Assumed limit of a cut-off answer when neither the request, the provider nor the server's usage says.
const ASSUMED_MAX_TOKENS: u32 = 4096;

#[derive(Debug, Clone)]
pub struct LlmClient {
    provider: Arc<dyn Provider>,
    defaults: Params,
    retry: RetryPolicy,
    think: ThinkTags,
    prices: Arc<PriceTable>,
    recorder: Option<Recorder>,
    totals: Arc<Mutex<UsageTotals>>,
    /// Answers waiting for their node (see [`LlmClient::inject_answer`]).
    injected: Arc<Mutex<HashMap<String, PathBuf>>>,
    fallback: Arc<SchemaFallback>,
    max_tokens_cap: u32,
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
            fallback: Arc::new(SchemaFallback::default()),
            max_tokens_cap: DEFAULT_MAX_TOKENS_CAP,
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
    /// The most `max_tokens` the re-ask of a cut-off answer may use.
    pub fn with_max_tokens_cap(mut self, cap: u32) -> Self {
        self.max_tokens_cap = cap.max(1);
        self
    }

    pub fn provider_name(&self) -> &str {
        self.provider.name()
    }
    pub fn model(&self) -> &str {
        self.provider.model()
    }

    /// Whether this client has switched to writing the JSON schema into the prompt because the server rejected
    /// the structured-output parameter.
    pub fn schema_in_prompt(&self) -> bool {
        self.fallback.engaged()
    }

    /// Usage so far, per node and in all.
    pub fn totals(&self) -> UsageTotals {
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Makes the next call of `node` answer with the contents of `answer_file` instead of asking the provider,
    /// whatever the provider (the response names `manual` as its provider and costs nothing). For the `manual`
    /// provider the usual way is to put the answer at the `answer_file` of
    /// [`LlmError::AwaitingManualAnswer`], which survives a restart; this is the in-process alternative.
    pub fn inject_answer(&self, node: impl Into<String>, answer_file: impl Into<PathBuf>) {
        self.injected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(node.into(), answer_file.into());
    }

    /// Asks once, retrying transient failures. The answer's thinking is split off into
    /// [`LlmResponse::thought`]. An answer cut off at the token limit is asked for once more with twice the
    /// limit (up to the cap), then is [`LlmError::CutOff`]. Every outcome, success or not, is recorded if a
    /// recorder is attached.
    pub async fn complete(&self, request: LlmRequest) -> Result<LlmResponse, LlmError> {
        let schema = request.schema.as_ref().map(|s| s.schema.clone());
        let (mut response, mut record) = self.complete_deferred(request).await?;
        // A caller that reads the text itself (a rewrite may come code-first, without JSON) still gets in the
        // record the repairs that reading its JSON leniently needs, so llm.jsonl shows every repair.
        if let Some(schema) = &schema
            && response.repairs.is_empty()
            && let Ok(read) = crate::intake::lenient_value(&response.text, Some(schema))
            && !read.repairs.is_empty()
        {
            record.repairs = read.repairs.clone();
            response.repairs = read.repairs;
        }
        self.write_record(record);
        Ok(response)
    }

    /// [`LlmClient::complete`] without writing the final record, which the caller completes (with repairs)
    /// and writes with [`LlmClient::write_record`]. Intermediate records (failures, cut-off answers) are written.
    pub(crate) async fn complete_deferred(
        &self,
        request: LlmRequest,
    ) -> Result<(LlmResponse, Record), LlmError> {
        let hash = request.stable_hash();
        let started = Instant::now();
        let mut sent = self.prepare(&request);
        if let Some(path) = self.take_injected(&request.node) {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| LlmError::io(&path, "reading the injected answer", e))?;
            let reply = ProviderReply {
                text,
                finish_reason: Some("stop".into()),
                ..ProviderReply::default()
            };
            return Ok(self.finish(&sent, &hash, reply, 1, "manual", started));
        }
        let mut notes: Vec<String> = Vec::new();
        let mut cut_off: Option<LlmResponse> = None;
        loop {
            let (reply, attempts) = match self.send_with_retries(&sent, &hash).await {
                Ok(ok) => ok,
                Err((err, attempts)) => {
                    let mut record =
                        self.failure_record(&sent, &hash, started.elapsed(), attempts, &err);
                    if sent.schema.is_some() && is_schema_rejection(&err) {
                        let note = switch_message(self.provider.name(), self.model(), &err);
                        if self.fallback.engage() {
                            tracing::warn!("{note}");
                        }
                        record.notes.push(note.clone());
                        self.write_record(record);
                        notes.push(note);
                        sent = self.prepare(&request);
                        continue;
                    }
                    record.notes.extend(notes);
                    self.write_record(record);
                    return Err(err);
                }
            };
            let is_cut = matches!(
                reply.finish_reason.as_deref(),
                Some("length" | "max_tokens")
            );
            let limit = sent
                .params
                .max_tokens
                .or_else(|| self.provider.default_max_tokens())
                .or_else(|| reply.usage.map(|u| u.output_tokens as u32))
                .unwrap_or(ASSUMED_MAX_TOKENS);
            let name = self.provider.name().to_string();
            let (mut response, mut record) =
                self.finish(&sent, &hash, reply, attempts, &name, started);
            record.notes.extend(notes.iter().cloned());
            if !is_cut {
                if let Some(earlier) = &cut_off {
                    response.absorb(earlier);
                }
                response.elapsed = started.elapsed();
                return Ok((response, record));
            }
            if cut_off.is_none() && limit < self.max_tokens_cap {
                let bigger = limit.saturating_mul(2).min(self.max_tokens_cap);
                let note = format!(
                    "the answer was cut off at max_tokens = {limit}; asked again with max_tokens = {bigger}"
                );
                tracing::warn!(node = %sent.node, "{note}");
                record.notes.push(note.clone());
                self.write_record(record);
                notes.push(note);
                sent.params.max_tokens = Some(bigger);
                cut_off = Some(response);
                continue;
            }
            self.write_record(record);
            return Err(LlmError::CutOff {
                node: sent.node.clone(),
                max_tokens: limit,
                tail: tail(&response.text),
            });
        }
    }

    /// The request as sent: client defaults filled in, and the schema written into the prompt where the
    /// provider cannot take it natively or the server refused it.
    fn prepare(&self, request: &LlmRequest) -> LlmRequest {
        let mut sent = request.clone();
        sent.params = request.params.or(&self.defaults);
        if let Some(schema) = &request.schema {
            let refused = self.fallback.engaged();
            if refused {
                sent.schema = None;
            }
            if refused || !self.provider.native_schema() {
                append_to_last_user(&mut sent, &json_instruction(schema));
            }
        }
        sent
    }

    fn take_injected(&self, node: &str) -> Option<PathBuf> {
        self.injected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(node)
    }

    /// Turns a reply into the response (thinking split off, usage and cost counted) and its record.
    fn finish(
        &self,
        sent: &LlmRequest,
        hash: &str,
        reply: ProviderReply,
        attempts: u32,
        provider: &str,
        started: Instant,
    ) -> (LlmResponse, Record) {
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
            provider: provider.to_string(),
            model,
            attempts,
            finish_reason: reply.finish_reason,
            request_hash: hash.to_string(),
            repairs: Vec::new(),
        };
        let record = Record {
            time: now_rfc3339(),
            node: response.node.clone(),
            provider: response.provider.clone(),
            model: response.model.clone(),
            request_hash: response.request_hash.clone(),
            messages: sent.messages.clone(),
            params: sent.params.clone(),
            schema: sent.schema.clone(),
            answer: Some(response.text.clone()),
            thought: response.thought.clone(),
            usage: Some(response.usage),
            cost_usd: response.cost_usd,
            elapsed_ms: response.elapsed.as_millis() as u64,
            attempts: response.attempts,
            finish_reason: response.finish_reason.clone(),
            error: None,
            repairs: Vec::new(),
            notes: Vec::new(),
        };
        (response, record)
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

    fn failure_record(
        &self,
        sent: &LlmRequest,
        hash: &str,
        elapsed: Duration,
        attempts: u32,
        err: &LlmError,
    ) -> Record {
        Record {
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
            repairs: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub(crate) fn write_record(&self, record: Record) {
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
