//! The "llm endpoint" line: is an LLM configured, and does its server answer?

use std::time::Duration;

use kt_llm::{EndpointCheck, LlmConfig, check_endpoint};

use super::Check;

const NAME: &str = "llm endpoint";

pub fn probe() -> Check {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let config = match LlmConfig::load(&cwd) {
        Ok((config, _)) => config,
        Err(e) => {
            return Check::missing(
                NAME,
                e.to_string(),
                "fix the [llm] section of the configuration",
            );
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return Check::missing(
                NAME,
                format!("cannot start the async runtime: {e}"),
                "report this as a bug",
            );
        }
    };
    match runtime.block_on(check_endpoint(&config, Duration::from_secs(3))) {
        EndpointCheck::Ok { detail } => Check::ok(NAME, detail),
        EndpointCheck::Problem { detail, fix } => Check::missing(NAME, detail, fix),
    }
}
