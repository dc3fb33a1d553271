//! Is the configured LLM usable? A quick check for `kt doctor`: `GET {base}/models` for HTTP providers (it
//! costs nothing and proves both reachability and the key), file checks for the others.

use std::time::Duration;

use crate::config::LlmConfig;
use crate::error::LlmError;
use crate::providers::{AnthropicProvider, OpenAiProvider};

/// Outcome of [`check_endpoint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointCheck {
    Ok { detail: String },
    Problem { detail: String, fix: String },
}

/// Checks the endpoint of `cfg` within about `limit`.
pub async fn check_endpoint(cfg: &LlmConfig, limit: Duration) -> EndpointCheck {
    let what = cfg.describe();
    if !cfg.is_configured() {
        return EndpointCheck::Problem {
            detail: "no LLM provider configured".into(),
            fix: "add `[llm]` with `provider = \"openai\"`, `model = \"...\"` (and `base_url` for a local server) to \
                  kt.toml or ~/.config/kt/config.toml, or set KT_LLM=PROVIDER:MODEL (e.g. openai:gpt-4.1, \
                  llama-server:local)"
                .into(),
        };
    }
    if !cfg.is_http() {
        // Building the provider reads the script or cassette, which is the whole check for those.
        return match cfg.build_provider() {
            Ok(_) => EndpointCheck::Ok { detail: what },
            Err(e) => problem(&what, &e),
        };
    }
    let endpoint = match cfg.endpoint() {
        Ok(e) => e,
        Err(e) => return problem(&what, &e),
    };
    let status = if cfg.is_anthropic() {
        match AnthropicProvider::new(endpoint) {
            Ok(p) => p.check(limit).await,
            Err(e) => Err(e),
        }
    } else {
        match OpenAiProvider::new(endpoint) {
            Ok(p) => p.check(limit).await,
            Err(e) => Err(e),
        }
    };
    match status {
        Ok(s) if (200..300).contains(&s) => EndpointCheck::Ok {
            detail: format!("{what} (reachable)"),
        },
        Ok(s @ (401 | 403)) => EndpointCheck::Problem {
            detail: format!("{what}: the server rejected the API key (HTTP {s})"),
            fix: format!(
                "check ${}",
                cfg.key_env()
                    .unwrap_or_else(|| "the API key variable".into())
            ),
        },
        // Some OpenAI-compatible servers have no /models; answering at all proves the server is there.
        Ok(s) => EndpointCheck::Ok {
            detail: format!("{what} (reachable; GET /models answered HTTP {s})"),
        },
        Err(e) => problem(&what, &e),
    }
}

fn problem(what: &str, e: &LlmError) -> EndpointCheck {
    let fix = match e {
        LlmError::Config { fix, .. } => fix.clone(),
        LlmError::Connection { .. } | LlmError::Timeout { .. } => {
            "start the server or fix `base_url` in the [llm] section (or KT_LLM_BASE_URL)".into()
        }
        _ => "see the message; `kt llm ask \"hi\"` shows the full error".into(),
    };
    EndpointCheck::Problem {
        detail: format!("{what}: {e}"),
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::server::{FakeServer, Reply};

    fn local(server: &FakeServer) -> LlmConfig {
        LlmConfig {
            provider: Some("vllm".into()),
            model: Some("m".into()),
            base_url: Some(server.base_url()),
            ..LlmConfig::default()
        }
    }

    #[tokio::test]
    async fn reachable_server_is_ok_and_rejected_key_is_a_problem() {
        let server = FakeServer::start(vec![
            Reply::json(serde_json::json!({"data": []})),
            Reply::status(401, "no"),
        ])
        .await;
        let cfg = local(&server);
        let ok = check_endpoint(&cfg, Duration::from_secs(2)).await;
        assert!(matches!(ok, EndpointCheck::Ok { .. }), "{ok:?}");
        assert_eq!(server.received()[0].path, "/v1/models");
        let bad = check_endpoint(&cfg, Duration::from_secs(2)).await;
        assert!(
            matches!(&bad, EndpointCheck::Problem { fix, .. } if fix.contains("VLLM_API_KEY")),
            "{bad:?}"
        );
    }

    #[tokio::test]
    async fn unconfigured_or_unreachable_endpoints_say_how_to_fix() {
        let none = check_endpoint(&LlmConfig::default(), Duration::from_secs(1)).await;
        assert!(
            matches!(&none, EndpointCheck::Problem { fix, .. } if fix.contains("kt.toml")),
            "{none:?}"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = LlmConfig {
            provider: Some("llama-server".into()),
            base_url: Some(format!("http://127.0.0.1:{port}/v1")),
            ..LlmConfig::default()
        };
        let down = check_endpoint(&cfg, Duration::from_secs(1)).await;
        assert!(
            matches!(&down, EndpointCheck::Problem { fix, .. } if fix.contains("base_url")),
            "{down:?}"
        );
        let missing = LlmConfig::parse_spec("replay:/nonexistent/llm.jsonl").unwrap();
        let r = check_endpoint(&missing, Duration::from_secs(1)).await;
        assert!(
            matches!(&r, EndpointCheck::Problem { detail, .. } if detail.contains("nonexistent")),
            "{r:?}"
        );
    }
}
