//! Any program as the LLM: `exec:COMMAND` runs COMMAND through `sh -c` for every call, with the prompt (all
//! messages as text, the JSON schema appended when structured output is asked) on standard input and the
//! answer read from standard output. The node label is in `$KT_LLM_NODE`. The call's total timeout applies;
//! a command that exits non-zero is an error showing the end of its standard error.

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::AsyncWriteExt;

use super::prompt_text::prompt_text;
use crate::error::{LlmError, TimeoutPhase, tail};
use crate::provider::{Call, Provider};
use crate::response::ProviderReply;

#[derive(Debug)]
pub struct ExecProvider {
    command: String,
    timeout: Duration,
}

impl ExecProvider {
    pub fn new(command: impl Into<String>, timeout: Duration) -> Self {
        Self {
            command: command.into(),
            timeout,
        }
    }

    fn failed(&self, status: String, stderr: &[u8]) -> LlmError {
        LlmError::Command {
            command: self.command.clone(),
            status,
            stderr: tail(String::from_utf8_lossy(stderr).trim()),
        }
    }
}

#[async_trait]
impl Provider for ExecProvider {
    fn name(&self) -> &str {
        "exec"
    }
    fn model(&self) -> &str {
        &self.command
    }
    /// The schema goes into the prompt text's own "Answer format" section.
    fn native_schema(&self) -> bool {
        true
    }
    fn billed(&self) -> bool {
        false
    }

    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError> {
        let prompt = prompt_text(call.request);
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .env("KT_LLM_NODE", &call.request.node)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| self.failed(format!("could not start: {e}"), b""))?;
        if let Some(mut stdin) = child.stdin.take() {
            // Written concurrently so that a command answering before it has read everything cannot deadlock;
            // a command that never reads its input closes the pipe, which is not an error.
            tokio::spawn(async move {
                let _ = stdin.write_all(prompt.as_bytes()).await;
            });
        }
        // On timeout the child is dropped, and so killed.
        let out = match tokio::time::timeout(self.timeout, child.wait_with_output()).await {
            Err(_) => {
                return Err(LlmError::Timeout {
                    provider: "exec".into(),
                    phase: TimeoutPhase::Total,
                    after: self.timeout,
                    url: self.command.clone(),
                });
            }
            Ok(Err(e)) => return Err(self.failed(format!("could not be waited for: {e}"), b"")),
            Ok(Ok(out)) => out,
        };
        if !out.status.success() {
            let status = match out.status.code() {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_string(),
            };
            return Err(self.failed(status, &out.stderr));
        }
        Ok(ProviderReply {
            text: String::from_utf8_lossy(&out.stdout).to_string(),
            finish_reason: Some("stop".into()),
            ..ProviderReply::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::LlmRequest;

    async fn run(command: &str, timeout: Duration) -> Result<ProviderReply, LlmError> {
        let req = LlmRequest::new("stage3/apply")
            .system("sys")
            .user("What is 6*7?");
        ExecProvider::new(command, timeout)
            .send(Call {
                request: &req,
                hash: "h",
                attempt: 1,
            })
            .await
    }

    #[tokio::test]
    async fn prompt_goes_to_stdin_and_stdout_is_the_answer() {
        let r = run(
            "grep -q '6\\*7' && printf 'forty-two from %s' \"$KT_LLM_NODE\"",
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(r.text, "forty-two from stage3/apply");
    }

    #[tokio::test]
    async fn failing_command_reports_status_and_stderr_tail() {
        let err = run(
            "echo 'model not found' >&2; exit 3",
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("exited with status 3") && msg.contains("model not found"),
            "{msg}"
        );
        assert!(!err.is_unavailable());
    }

    #[tokio::test]
    async fn slow_command_is_killed_at_the_timeout() {
        let t = std::time::Instant::now();
        let err = run("sleep 5", Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Timeout { .. }), "{err}");
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn command_that_ignores_its_input_still_answers() {
        let r = run("echo fine", Duration::from_secs(10)).await.unwrap();
        assert_eq!(r.text.trim(), "fine");
    }
}
