//! A human as the LLM, in two steps. A call writes its prompt to `DIR/NNN-<purpose>.prompt.md` (NNN counts the
//! prompts of the directory, `<purpose>` is the node label) and returns the answer in
//! `DIR/NNN-<purpose>.answer.md` if that file exists; otherwise it ends with
//! [`LlmError::AwaitingManualAnswer`] naming both files, which the pipeline turns into a paused run. Once the
//! answer file is written (`kt resume RUN --answer FILE` copies FILE there), the resumed run asks the same
//! question again, finds the same prompt file (matched by the request's hash, written into its first line)
//! and gets the answer. The same question asked again in the same directory gets the same answer.

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::prompt_text::prompt_text;
use crate::error::LlmError;
use crate::provider::{Call, Provider};
use crate::response::ProviderReply;

/// The first line of every prompt file, followed by the request hash.
const HASH_MARK: &str = "<!-- kt request ";

#[derive(Debug)]
pub struct ManualProvider {
    dir: PathBuf,
}

impl ManualProvider {
    /// Prompts and answers live in `dir` (created on the first call).
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_path_buf(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The prompt and answer files of the request with hash `hash` asked by `node`: the existing pair if this
    /// request was asked before, else a new number.
    pub fn files_for(&self, node: &str, hash: &str) -> Result<(PathBuf, PathBuf), LlmError> {
        let purpose = safe_name(node);
        let mut next = 1;
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| LlmError::io(&self.dir, "listing the prompt directory", e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(stem) = name.strip_suffix(".prompt.md") else {
                continue;
            };
            let Some((number, rest)) = stem.split_once('-') else {
                continue;
            };
            let Ok(n) = number.parse::<u32>() else {
                continue;
            };
            next = next.max(n + 1);
            if rest == purpose && first_line(&entry.path()).is_some_and(|l| l.contains(hash)) {
                return Ok(self.pair(number, &purpose));
            }
        }
        Ok(self.pair(&format!("{next:03}"), &purpose))
    }

    fn pair(&self, number: &str, purpose: &str) -> (PathBuf, PathBuf) {
        (
            self.dir.join(format!("{number}-{purpose}.prompt.md")),
            self.dir.join(format!("{number}-{purpose}.answer.md")),
        )
    }
}

/// Letters, digits, `-`, `_` and `.` are kept; anything else (the `/` of `stage3/apply`) becomes `_`.
fn safe_name(node: &str) -> String {
    node.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn first_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().next().map(str::to_string)
}

#[async_trait]
impl Provider for ManualProvider {
    fn name(&self) -> &str {
        "manual"
    }
    fn model(&self) -> &str {
        "human"
    }
    /// The schema goes into the prompt file's own "Answer format" section.
    fn native_schema(&self) -> bool {
        true
    }
    fn billed(&self) -> bool {
        false
    }

    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError> {
        let req = call.request;
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| LlmError::io(&self.dir, "creating the prompt directory", e))?;
        let (prompt_file, answer_file) = self.files_for(&req.node, call.hash)?;
        if !prompt_file.exists() {
            let answer_name = answer_file
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let id = answer_name.trim_end_matches(".answer.md");
            let text = format!(
                "{HASH_MARK}{} -->\n# Prompt for node `{}`\n\nWrite the answer to `{answer_name}` in this directory \
                 and resume the run (`kt resume RUN`, or `kt resume RUN --answer FILE --answer-for {id}`).\n\n{}",
                call.hash,
                req.node,
                prompt_text(req)
            );
            std::fs::write(&prompt_file, text)
                .map_err(|e| LlmError::io(&prompt_file, "writing the prompt", e))?;
        }
        match std::fs::read_to_string(&answer_file) {
            Ok(text) if !text.trim().is_empty() => Ok(ProviderReply {
                text,
                finish_reason: Some("stop".into()),
                ..ProviderReply::default()
            }),
            _ => Err(LlmError::AwaitingManualAnswer {
                node: req.node.clone(),
                prompt_file,
                answer_file,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::LlmRequest;

    async fn ask(p: &ManualProvider, req: &LlmRequest) -> Result<ProviderReply, LlmError> {
        p.send(Call {
            request: req,
            hash: &req.stable_hash(),
            attempt: 1,
        })
        .await
    }

    #[tokio::test]
    async fn prompt_waits_for_its_answer_file_then_returns_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = ManualProvider::new(dir.path().join("prompts"));
        let plan = LlmRequest::new("stage3/plan").user("Plan it.");
        let err = ask(&p, &plan).await.unwrap_err();
        let LlmError::AwaitingManualAnswer {
            prompt_file,
            answer_file,
            ..
        } = err
        else {
            panic!("wrong error: {err}")
        };
        assert!(prompt_file.ends_with("001-stage3_plan.prompt.md"));
        assert!(answer_file.ends_with("001-stage3_plan.answer.md"));
        assert!(
            std::fs::read_to_string(&prompt_file)
                .unwrap()
                .contains("Plan it.")
        );

        // A different question gets the next number; the same question finds its old files.
        let other = LlmRequest::new("stage3/plan").user("Plan again.");
        let LlmError::AwaitingManualAnswer {
            prompt_file: second,
            ..
        } = ask(&p, &other).await.unwrap_err()
        else {
            panic!("expected a second prompt")
        };
        assert!(second.ends_with("002-stage3_plan.prompt.md"));
        std::fs::write(&answer_file, "{\"steps\": []}").unwrap();
        assert_eq!(ask(&p, &plan).await.unwrap().text, "{\"steps\": []}");
    }

    #[tokio::test]
    async fn an_empty_answer_file_still_waits() {
        let dir = tempfile::tempdir().unwrap();
        let p = ManualProvider::new(dir.path());
        let q = LlmRequest::new("n").user("q");
        let LlmError::AwaitingManualAnswer { answer_file, .. } = ask(&p, &q).await.unwrap_err()
        else {
            panic!("expected a wait")
        };
        std::fs::write(&answer_file, "  \n").unwrap();
        assert!(matches!(
            ask(&p, &q).await,
            Err(LlmError::AwaitingManualAnswer { .. })
        ));
    }
}
