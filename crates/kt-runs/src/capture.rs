//! LLM calls made while debugging: which provider answers (`live`, the run's recording, or a script), what
//! each call was sent and what came back raw, and the prompt override. All of it sits at the provider layer,
//! under the client: nodes render and ask exactly as in a real run, so what is shown is what a run would send.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kt_llm::{
    Call, LlmClient, LlmConfig, LlmError, Provider, ProviderReply, ReplayProvider, Role,
    ScriptedProvider,
};
use kt_pipeline::RunLlm;
use kt_pipeline::run_llm::{Consent, LlmOrigin, llm_for_run};
use serde::Serialize;

use crate::error::RunsError;

/// Who answers a node's LLM calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", content = "file", rename_all = "snake_case")]
pub enum LlmChoice {
    /// Recorded answers: the run's effect journal first, then its `llm.jsonl` by request. Nothing is paid for.
    Replay,
    /// The run's own LLM as run.json records it (or the one `KT_LLM` names), asked anew.
    Live,
    /// Answers from a script file (kt-llm's scripted provider format).
    Scripted(PathBuf),
    /// Another LLM, named as `PROVIDER:MODEL` (it overrides the run's recorded one), asked anew.
    Given(String),
}

impl LlmChoice {
    /// `live`, `replay`, `scripted:FILE` or any other `PROVIDER:MODEL`.
    pub fn parse(spec: &str) -> Result<Self, RunsError> {
        match spec {
            "live" => Ok(LlmChoice::Live),
            "replay" => Ok(LlmChoice::Replay),
            s => match s.strip_prefix("scripted:") {
                Some(file) if !file.is_empty() => Ok(LlmChoice::Scripted(PathBuf::from(file))),
                Some(_) => Err(RunsError::BadSetting {
                    spec: spec.to_string(),
                    reason: "`scripted:` needs its file: scripted:FILE".into(),
                }),
                None => {
                    LlmConfig::parse_spec(s).map_err(|e| RunsError::BadSetting {
                        spec: spec.to_string(),
                        reason: format!(
                            "expected `live`, `replay`, `scripted:FILE` or PROVIDER:MODEL ({e})"
                        ),
                    })?;
                    Ok(LlmChoice::Given(s.to_string()))
                }
            },
        }
    }

    /// Whether recorded effects (LLM answers and tuning results) are reused.
    pub fn reuses_journal(&self) -> bool {
        matches!(self, LlmChoice::Replay)
    }

    /// The engine's effect mode for this choice: reuse the journal, or do every effect anew.
    pub fn replay_mode(&self) -> kt_graph::ReplayMode {
        if self.reuses_journal() {
            kt_graph::ReplayMode::Reuse
        } else {
            kt_graph::ReplayMode::Live
        }
    }
}

/// One LLM call as it went out and came back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapturedCall {
    /// The request's label (e.g. `stage3.apply`).
    pub label: String,
    pub attempt: u32,
    pub system: String,
    /// The user message(s) as sent (after any override).
    pub prompt: String,
    /// The raw answer text; absent when the call failed.
    pub answer: Option<String>,
    pub error: Option<String>,
    /// True when `prompt` is the override, not the rendered template.
    pub overridden: bool,
    /// Where this record comes from: `asked` (sent during this debug run) or `recorded` (the run's llm.jsonl).
    pub origin: &'static str,
}

/// Collects the calls of one debugging session. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct CallLog {
    calls: Arc<Mutex<Vec<CapturedCall>>>,
}

impl CallLog {
    pub fn calls(&self) -> Vec<CapturedCall> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    fn push(&self, call: CapturedCall) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call);
    }
}

/// Wraps a provider: records every call, and replaces the first call's user prompt with an override.
#[derive(Debug)]
struct Capturing {
    inner: Arc<dyn Provider>,
    log: CallLog,
    /// Consumed by the first call (the node's main question); later calls (fix-ups) go out as rendered.
    prompt_override: Mutex<Option<String>>,
}

#[async_trait]
impl Provider for Capturing {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn native_schema(&self) -> bool {
        self.inner.native_schema()
    }
    // Without this a replayed or scripted answer would be priced by the model name it carries.
    fn billed(&self) -> bool {
        self.inner.billed()
    }
    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError> {
        let replacement = self
            .prompt_override
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let mut request = call.request.clone();
        let overridden = replacement.is_some();
        if let Some(text) = replacement
            && let Some(m) = request.messages.iter_mut().find(|m| m.role == Role::User)
        {
            m.content = text;
        }
        let join = |role: Role| {
            request
                .messages
                .iter()
                .filter(|m| m.role == role)
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let (system, prompt) = (join(Role::System), join(Role::User));
        let result = self
            .inner
            .send(Call {
                request: &request,
                hash: call.hash,
                attempt: call.attempt,
            })
            .await;
        self.log.push(CapturedCall {
            label: request.node.clone(),
            attempt: call.attempt,
            system,
            prompt,
            answer: result.as_ref().ok().map(|r| r.text.clone()),
            error: result.as_ref().err().map(|e| e.to_string()),
            overridden,
            origin: "asked",
        });
        result
    }
}

/// The LLM a live choice asks on a run that recorded `recorded`: that one unless `KT_LLM` or a
/// [`LlmChoice::Given`] names another; `None` for the choices that ask no one (replay, scripted). The origin's
/// notice is the line to show the user. A recorded command or server of a run not provably the user's needs
/// `consent` (see [`llm_for_run`]).
pub fn live_llm(
    choice: &LlmChoice,
    recorded: &RunLlm,
    consent: &Consent,
) -> Result<Option<(LlmConfig, LlmOrigin)>, RunsError> {
    let given = match choice {
        LlmChoice::Live => None,
        LlmChoice::Given(spec) => Some(spec.as_str()),
        LlmChoice::Replay | LlmChoice::Scripted(_) => return Ok(None),
    };
    let cwd = std::env::current_dir().map_err(|e| RunsError::io("reading", ".", e))?;
    let (config, origin) = llm_for_run(recorded, &cwd, given, consent).map_err(|e| {
        RunsError::Usage(format!(
            "a live answer needs an LLM: the run's recorded one, or `--llm PROVIDER:MODEL` \
             (e.g. --llm openai:gpt-4.1): {e}"
        ))
    })?;
    if !config.is_configured() {
        return Err(RunsError::Usage(
            "a live answer needs an LLM and this run recorded none: pass `--llm PROVIDER:MODEL` \
             (e.g. --llm openai:gpt-4.1) or set KT_LLM"
                .into(),
        ));
    }
    Ok(Some((config, origin)))
}

/// The client a debugging session's nodes use. `run_llm_jsonl` is the run's recording (the replay cassette),
/// `recorded` the LLM its run.json names (what `live` asks).
pub fn debug_client(
    choice: &LlmChoice,
    run_llm_jsonl: &Path,
    recorded: &RunLlm,
    consent: &Consent,
    prompt_override: Option<String>,
    log: &CallLog,
) -> Result<Arc<LlmClient>, RunsError> {
    if prompt_override.is_some() && choice.reuses_journal() {
        return Err(RunsError::Usage(
            "a prompt override needs a fresh answer: add `--llm live` or `--llm scripted:FILE` \
             (replay would return the answer recorded for the original prompt)"
                .into(),
        ));
    }
    let (inner, config): (Arc<dyn Provider>, Option<LlmConfig>) = match choice {
        LlmChoice::Replay => {
            if !run_llm_jsonl.is_file() {
                // Without a recording, only journaled answers can be replayed; a call that misses says so.
                (
                    Arc::new(ScriptedProvider::from_answers(
                        run_llm_jsonl.to_path_buf(),
                        Vec::new(),
                    )),
                    None,
                )
            } else {
                (
                    Arc::new(ReplayProvider::open(run_llm_jsonl).map_err(llm_error)?),
                    None,
                )
            }
        }
        LlmChoice::Scripted(file) => (
            Arc::new(ScriptedProvider::load(file).map_err(llm_error)?),
            None,
        ),
        LlmChoice::Live | LlmChoice::Given(_) => {
            let Some((config, _)) = live_llm(choice, recorded, consent)? else {
                return Err(RunsError::Usage("no live LLM for this choice".into()));
            };
            let provider = config.build_provider().map_err(|e| {
                RunsError::Usage(format!(
                    "the live LLM ({}) cannot be used: {e}",
                    config.describe()
                ))
            })?;
            (provider, Some(config))
        }
    };
    let provider = Capturing {
        inner,
        log: log.clone(),
        prompt_override: Mutex::new(prompt_override),
    };
    let mut client = LlmClient::from_arc(Arc::new(provider));
    match config {
        Some(c) => {
            client = client
                .with_defaults(c.params())
                .with_retry(c.retry_policy())
        }
        // Recorded and scripted answers are what they are: re-asking would only consume the next one.
        None => client = client.with_parse_retries(0),
    }
    Ok(Arc::new(client))
}

/// The recorded call (from `llm.jsonl`) whose user prompt hashes (blake3, hex) to `prompt_hash`.
pub fn recorded_call(run_llm_jsonl: &Path, prompt_hash: &str) -> Option<CapturedCall> {
    let records = kt_llm::read_records(run_llm_jsonl).ok()?;
    records.into_iter().find_map(|r| {
        let user: Vec<&str> = r
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .collect();
        let hit = user.iter().any(|u| prompt_hashes_to(u, prompt_hash));
        hit.then(|| CapturedCall {
            label: r.node.clone(),
            attempt: r.attempts,
            system: r
                .messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.clone())
                .collect::<Vec<_>>()
                .join("\n\n"),
            prompt: user.join("\n\n"),
            answer: r.answer.clone(),
            error: r.error.clone(),
            overridden: false,
            origin: "recorded",
        })
    })
}

/// Whether `sent` is the rendered prompt hashing to `hash`, possibly followed by text the client appended (the
/// JSON schema for providers without native structured output goes after a blank line).
fn prompt_hashes_to(sent: &str, hash: &str) -> bool {
    let matches = |text: &str| blake3::hash(text.as_bytes()).to_hex().as_str() == hash;
    matches(sent) || sent.match_indices("\n\n").any(|(i, _)| matches(&sent[..i]))
}

/// An LLM that cannot be set up for a re-run, as the crate's error.
fn llm_error(e: LlmError) -> RunsError {
    RunsError::Llm(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours() -> Consent {
        Consent {
            ours: Ok(()),
            trust_run: false,
        }
    }

    #[test]
    fn llm_choices_parse_and_bad_ones_say_what_is_accepted() {
        assert_eq!(LlmChoice::parse("live").unwrap(), LlmChoice::Live);
        assert_eq!(LlmChoice::parse("replay").unwrap(), LlmChoice::Replay);
        assert_eq!(
            LlmChoice::parse("scripted:a.toml").unwrap(),
            LlmChoice::Scripted("a.toml".into())
        );
        let err = LlmChoice::parse("scripted:").unwrap_err().to_string();
        assert!(err.contains("scripted:FILE"), "{err}");
        assert_eq!(
            LlmChoice::parse("openai:gpt-4.1").unwrap(),
            LlmChoice::Given("openai:gpt-4.1".into())
        );
        let err = LlmChoice::parse("nosuch:x").unwrap_err().to_string();
        assert!(err.contains("PROVIDER:MODEL"), "{err}");
    }

    #[test]
    fn live_asks_the_llm_the_run_recorded_and_a_given_one_overrides_it() {
        if std::env::var_os("KT_LLM").is_some() {
            return;
        }
        // the recorded script must exist: a missing one is reported with the flag that names another
        let dir = tempfile::tempdir().unwrap();
        let answers = dir.path().join("answers.toml");
        std::fs::write(&answers, "").unwrap();
        let spec = format!("scripted:{}", answers.display());
        let recorded = RunLlm {
            provider: "scripted".into(),
            spec: Some(spec.clone()),
            ..RunLlm::default()
        };
        let (config, origin) = live_llm(&LlmChoice::Live, &recorded, &ours())
            .unwrap()
            .unwrap();
        assert_eq!(config.spec().as_deref(), Some(spec.as_str()));
        assert_eq!(origin, LlmOrigin::Recorded(spec.clone()));
        let given = LlmChoice::Given("exec:cat".into());
        let (config, origin) = live_llm(&given, &recorded, &ours()).unwrap().unwrap();
        assert_eq!(config.spec().as_deref(), Some("exec:cat"));
        assert!(
            origin.notice("exec").unwrap().contains("overrides"),
            "{origin:?}"
        );
        assert!(
            live_llm(&LlmChoice::Replay, &recorded, &ours())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_prompt_override_with_replay_is_refused() {
        let err = debug_client(
            &LlmChoice::Replay,
            Path::new("/nonexistent"),
            &RunLlm::default(),
            &ours(),
            Some("x".into()),
            &CallLog::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("--llm live"), "{err}");
    }

    #[tokio::test]
    async fn the_override_replaces_the_first_prompt_only_and_every_call_is_captured() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("a.json");
        std::fs::write(
            &script,
            r#"{"answers": [{"text": "one"}, {"text": "two"}]}"#,
        )
        .unwrap();
        let log = CallLog::default();
        let client = debug_client(
            &LlmChoice::Scripted(script),
            Path::new("/none"),
            &RunLlm::default(),
            &ours(),
            Some("OVERRIDE".into()),
            &log,
        )
        .unwrap();
        let a = client
            .complete(
                kt_llm::LlmRequest::new("n")
                    .system("sys")
                    .user("rendered 1"),
            )
            .await
            .unwrap();
        let b = client
            .complete(kt_llm::LlmRequest::new("n").user("rendered 2"))
            .await
            .unwrap();
        assert_eq!((a.text.as_str(), b.text.as_str()), ("one", "two"));
        let calls = log.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].prompt.as_str(), calls[0].overridden),
            ("OVERRIDE", true)
        );
        assert_eq!(calls[0].system, "sys");
        assert_eq!(
            (calls[1].prompt.as_str(), calls[1].overridden),
            ("rendered 2", false)
        );
        assert_eq!(calls[1].answer.as_deref(), Some("two"));
    }

    #[tokio::test]
    async fn replayed_and_scripted_answers_cost_nothing_even_under_a_priced_model_name() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("a.json");
        std::fs::write(&script, r#"{"answers": [{"text": "one"}]}"#).unwrap();
        let log = CallLog::default();
        let client = debug_client(
            &LlmChoice::Scripted(script),
            Path::new("/none"),
            &RunLlm::default(),
            &ours(),
            None,
            &log,
        )
        .unwrap();
        // gpt-4.1 is in the shipped price table: only the wrapped provider's `billed() == false` makes it free.
        let answer = client
            .complete(kt_llm::LlmRequest::new("n").user("q").model("gpt-4.1"))
            .await
            .unwrap();
        assert_eq!(answer.cost_usd, Some(0.0));
    }

    #[test]
    fn the_wrapper_reports_what_the_wrapped_provider_says_about_billing_and_schemas() {
        let wrap = |inner: Arc<dyn Provider>| Capturing {
            inner,
            log: CallLog::default(),
            prompt_override: Mutex::new(None),
        };
        let scripted = wrap(Arc::new(ScriptedProvider::from_answers(
            "x".into(),
            Vec::new(),
        )));
        assert!(!scripted.billed());
        assert!(!scripted.native_schema());
        let mut config = LlmConfig::parse_spec("openai:gpt-4.1").unwrap();
        config.api_key = Some(kt_llm::ApiKey::new("test-key"));
        let live = wrap(config.build_provider().unwrap());
        assert!(live.billed());
        assert!(
            live.native_schema(),
            "the OpenAI provider constrains output itself"
        );
    }
}
