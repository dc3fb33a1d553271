//! A human as the LLM: the prompt is written to a file and the call ends with
//! [`LlmError::NeedsHumanAnswer`], which the graph turns into an interrupt at that node. The answer comes back
//! through [`crate::LlmClient::inject_answer`] when the run is resumed (`kt resume --answer FILE`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::error::LlmError;
use crate::provider::{Call, Provider};
use crate::response::ProviderReply;

#[derive(Debug)]
pub struct ManualProvider {
    dir: PathBuf,
}

impl ManualProvider {
    /// Prompts are written into `dir` as `<node>.prompt.md`.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_path_buf(),
        }
    }

    /// Where the prompt of `node` goes. Characters other than letters, digits, `-`, `_` and `.` become `_`.
    pub fn prompt_path(&self, node: &str) -> PathBuf {
        let safe: String = node
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join(format!("{safe}.prompt.md"))
    }
}

#[async_trait]
impl Provider for ManualProvider {
    fn name(&self) -> &str {
        "manual"
    }
    fn model(&self) -> &str {
        "human"
    }

    fn billed(&self) -> bool {
        false
    }

    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError> {
        let req = call.request;
        let mut text = format!("# Prompt for node `{}`\n\n", req.node);
        for m in &req.messages {
            let _ = write!(text, "## {:?}\n\n{}\n\n", m.role, m.content);
        }
        if let Some(schema) = &req.schema {
            let _ = write!(
                text,
                "## Answer format\n\nAnswer with JSON matching this schema:\n\n```json\n{}\n```\n",
                serde_json::to_string_pretty(&schema.schema).unwrap_or_default()
            );
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| LlmError::io(&self.dir, "creating the prompt directory", e))?;
        let path = self.prompt_path(&req.node);
        std::fs::write(&path, text).map_err(|e| LlmError::io(&path, "writing the prompt", e))?;
        Err(LlmError::NeedsHumanAnswer {
            node: req.node.clone(),
            prompt_path: path,
        })
    }
}
