//! Answers from a file, for tests and demos. Each `[[answers]]` entry has a `text` and optionally the `node`
//! it answers. A call takes the next unused entry for its node, else the next unused unlabelled entry (call
//! order). TOML or JSON (`{"answers": [...]}`), chosen by the file extension.
//!
//! ```toml
//! [[answers]]
//! node = "describe"
//! text = '{"summary": "adds two vectors"}'
//!
//! [[answers]]          # unlabelled: used by whichever call comes next
//! text = "```cuda\n__global__ void k() {}\n```"
//! ```

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use serde::Deserialize;

use crate::error::LlmError;
use crate::provider::{Call, Provider};
use crate::response::ProviderReply;
use crate::usage::Usage;

#[derive(Debug, Clone, Deserialize)]
pub struct ScriptedAnswer {
    #[serde(default)]
    pub node: Option<String>,
    pub text: String,
    #[serde(default)]
    pub thought: Option<String>,
    /// Token counts to report; when absent the client estimates them.
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
struct Script {
    #[serde(default)]
    answers: Vec<ScriptedAnswer>,
}

#[derive(Debug)]
pub struct ScriptedProvider {
    path: PathBuf,
    state: Mutex<(Vec<Option<ScriptedAnswer>>, usize)>,
}

impl ScriptedProvider {
    pub fn load(path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref().to_path_buf();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| LlmError::io(&path, "reading the answer script", e))?;
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let script: Script = if is_json {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        } else {
            toml::from_str(&text).map_err(|e| e.to_string())
        }
        .map_err(|e| LlmError::Config {
            detail: format!("answer script {} is invalid: {e}", path.display()),
            fix: "write `[[answers]]` entries with `text = ...` and optional `node = ...`".into(),
        })?;
        Ok(Self::from_answers(path, script.answers))
    }

    /// A script built in code (tests).
    pub fn from_answers(path: PathBuf, answers: Vec<ScriptedAnswer>) -> Self {
        Self {
            path,
            state: Mutex::new((answers.into_iter().map(Some).collect(), 0)),
        }
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "scripted"
    }

    fn billed(&self) -> bool {
        false
    }

    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError> {
        let node = &call.request.node;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.1 += 1;
        let call_no = state.1;
        let slots = &mut state.0;
        let pick = slots
            .iter()
            .position(|a| {
                a.as_ref()
                    .is_some_and(|a| a.node.as_deref() == Some(node.as_str()))
            })
            .or_else(|| {
                slots
                    .iter()
                    .position(|a| a.as_ref().is_some_and(|a| a.node.is_none()))
            });
        let answer =
            pick.and_then(|i| slots[i].take())
                .ok_or_else(|| LlmError::ScriptExhausted {
                    node: node.clone(),
                    call: call_no,
                    script: self.path.clone(),
                })?;
        Ok(ProviderReply {
            text: answer.text,
            thought: answer.thought,
            usage: answer.usage,
            model: None,
            finish_reason: Some("stop".into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::LlmRequest;

    async fn ask(p: &ScriptedProvider, node: &str) -> Result<String, LlmError> {
        let req = LlmRequest::new(node).user("q");
        p.send(Call {
            request: &req,
            hash: "h",
            attempt: 1,
        })
        .await
        .map(|r| r.text)
    }

    #[tokio::test]
    async fn node_labelled_answers_first_then_call_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "[[answers]]\ntext = \"one\"\n[[answers]]\nnode = \"b\"\ntext = \"for b\"\n[[answers]]\ntext = \"two\"\n").unwrap();
        let p = ScriptedProvider::load(&path).unwrap();
        assert_eq!(ask(&p, "b").await.unwrap(), "for b");
        assert_eq!(ask(&p, "b").await.unwrap(), "one");
        assert_eq!(ask(&p, "a").await.unwrap(), "two");
        let err = ask(&p, "a").await.unwrap_err();
        assert!(
            matches!(err, LlmError::ScriptExhausted { call: 4, .. }),
            "{err}"
        );
    }

    #[tokio::test]
    async fn json_scripts_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, r#"{"answers": [{"node": "x", "text": "hi"}]}"#).unwrap();
        let p = ScriptedProvider::load(&path).unwrap();
        assert_eq!(ask(&p, "x").await.unwrap(), "hi");
    }
}
