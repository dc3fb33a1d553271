//! The one seed a run is started with (`kt transform --seed N`, or `KT_SEED`) and where it goes: the LLM's
//! sampling seed, Stage 2's first test seed (test i gets `seed + i`) and the tuner's search seed. Only the LLM
//! part needs a rule, so that is all this file holds.

use kt_llm::LlmConfig;

/// The seed LLM requests carry. A replayed run must send what the recording sent, because the seed is part of
/// the request hash a recording is looked up by: a `replay:` provider takes the seed of the recording's first
/// request (none for a recording made without one), whatever `seed` says. Every other provider gets `seed`,
/// else the configured one (kt.toml's `[llm] seed`).
pub fn llm_seed(config: &LlmConfig, seed: Option<u64>) -> Option<u64> {
    if config.provider.as_deref() == Some("replay") {
        return config
            .path
            .as_deref()
            .and_then(|p| kt_llm::read_records(p).ok())
            .and_then(|records| records.into_iter().next())
            .and_then(|r| r.params.seed);
    }
    seed.or(config.seed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_live_provider_gets_the_run_seed_over_the_configured_one() {
        let mut config = LlmConfig::parse_spec("openai:gpt-4.1").unwrap();
        assert_eq!(llm_seed(&config, Some(7)), Some(7));
        assert_eq!(llm_seed(&config, None), None);
        config.seed = Some(3);
        assert_eq!(llm_seed(&config, Some(7)), Some(7));
        assert_eq!(llm_seed(&config, None), Some(3));
    }

    #[tokio::test]
    async fn a_replay_sends_the_seed_of_its_recording_whatever_the_run_seed() {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("llm.jsonl");
        let script = dir.path().join("a.json");
        std::fs::write(&script, r#"{"answers": [{"text": "one"}]}"#).unwrap();
        let recorded = kt_llm::LlmClient::new(kt_llm::ScriptedProvider::load(&script).unwrap())
            .with_defaults(kt_llm::Params {
                seed: Some(42),
                ..kt_llm::Params::default()
            })
            .with_recorder(kt_llm::Recorder::open(&cassette).unwrap());
        recorded
            .complete(kt_llm::LlmRequest::new("n").user("q"))
            .await
            .unwrap();
        let replay = LlmConfig::parse_spec(&format!("replay:{}", cassette.display())).unwrap();
        assert_eq!(llm_seed(&replay, Some(7)), Some(42));
        assert_eq!(llm_seed(&replay, None), Some(42));

        let unseeded = dir.path().join("unseeded.jsonl");
        std::fs::write(&script, r#"{"answers": [{"text": "one"}]}"#).unwrap();
        kt_llm::LlmClient::new(kt_llm::ScriptedProvider::load(&script).unwrap())
            .with_recorder(kt_llm::Recorder::open(&unseeded).unwrap())
            .complete(kt_llm::LlmRequest::new("n").user("q"))
            .await
            .unwrap();
        let replay = LlmConfig::parse_spec(&format!("replay:{}", unseeded.display())).unwrap();
        assert_eq!(llm_seed(&replay, Some(7)), None);
    }
}
