//! `kt experiment run --dry-run`: each model's API key is set in this environment (its cells inherit it), so a
//! sweep does not start hundreds of cells that fail at their first LLM call. The key is looked at, never
//! printed.

use std::path::Path;

use anyhow::Context;
use kt_llm::LlmConfig;

/// The configuration a cell of model `spec` runs with: the design's file for it (given to the cell as
/// `KT_CONFIG`), else the one kt finds from `cwd`, with `spec` over it — as the cell's `kt transform` builds it.
pub fn cell_config(spec: &str, file: Option<&Path>, cwd: &Path) -> anyhow::Result<LlmConfig> {
    let mut config = match file {
        Some(f) => LlmConfig::from_file(f)?,
        None => LlmConfig::load(cwd)?.0,
    };
    config.overlay(LlmConfig::parse_spec(spec)?);
    Ok(config)
}

/// Refuses a model whose key variable is unset or empty: one named by its configuration (`api_key_env`), or
/// the provider's own one where its service needs a key (the check a real run makes before its first call).
pub fn check_key(spec: &str, config: &LlmConfig) -> anyhow::Result<()> {
    if !config.is_http() || config.api_key.is_some() {
        return Ok(());
    }
    let named = config.resolved().api_key_env.filter(|v| !v.is_empty());
    if let Some(var) = named
        && std::env::var_os(&var).is_none_or(|v| v.is_empty())
    {
        anyhow::bail!(
            "model `{spec}` reads its API key from ${var}, which is not set here (its cells inherit this \
             environment and would fail at their first LLM call); export {var}=... before `kt experiment run`"
        );
    }
    config
        .endpoint()
        .map(drop)
        .with_context(|| format!("model `{spec}`"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn openai(key_env: &str) -> LlmConfig {
        let mut config = LlmConfig::parse_spec("openai:gpt-4.1").unwrap();
        config.api_key_env = Some(key_env.into());
        config
    }

    #[test]
    fn an_unset_key_variable_is_named_and_a_file_provider_needs_none() {
        let err = check_key("openai:gpt-4.1", &openai("KT_TEST_SURELY_UNSET_KEY_49"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("$KT_TEST_SURELY_UNSET_KEY_49"), "{err}");
        // PATH is set everywhere: a set variable passes, and its value is not part of anything returned
        check_key("openai:gpt-4.1", &openai("PATH")).unwrap();
        let replay = LlmConfig::parse_spec("replay:x.jsonl").unwrap();
        check_key("replay:x.jsonl", &replay).unwrap();
    }

    #[test]
    fn a_design_s_file_for_the_model_is_read_under_its_spec() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.toml");
        std::fs::write(
            &file,
            "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"KT_TEST_SURELY_UNSET_KEY_49\"\n",
        )
        .unwrap();
        let config = cell_config("openai:m", Some(&file), dir.path()).unwrap();
        assert_eq!(
            config.api_key_env.as_deref(),
            Some("KT_TEST_SURELY_UNSET_KEY_49")
        );
        assert!(check_key("openai:m", &config).is_err());
    }
}
