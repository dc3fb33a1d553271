//! The Stage 2 answer: a Python generator program, taken from the answer's fenced code block.

use serde::{Deserialize, Serialize};

/// `stage2-generator`, `stage2-resize`, `stage2-tail`: a Python module defining `generate(seed) -> list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratorScript {
    pub code: String,
}

/// The answer type name as the templates spell it.
pub(crate) const ANSWER: &str = "GeneratorScript";

impl GeneratorScript {
    /// The last ```python (or ```py) block of `answer`, else its only fenced block, else the whole answer when it
    /// is bare code. Refuses an answer without `def generate(` with a reason for the LLM.
    pub fn from_answer(answer: &str) -> Result<GeneratorScript, String> {
        let blocks = fenced_blocks(answer);
        let code = blocks
            .iter()
            .rev()
            .find(|(lang, _)| matches!(lang.as_str(), "python" | "py" | "python3"))
            .map(|(_, body)| body.clone())
            .or_else(|| match blocks.as_slice() {
                [(_, only)] => Some(only.clone()),
                _ => None,
            })
            .or_else(|| (blocks.is_empty() && answer.contains("def generate(")).then(|| answer.to_string()))
            .ok_or_else(|| {
                if blocks.is_empty() {
                    "the answer has no ```python code block; give the whole program in one ```python block".to_string()
                } else {
                    format!("the answer has {} code blocks and none is tagged python; give the program in one ```python block", blocks.len())
                }
            })?;
        if !code.contains("def generate(") {
            return Err("the program does not define `def generate(seed: int) -> list`".into());
        }
        Ok(GeneratorScript { code })
    }
}

/// (language tag, body) of every closed ``` block, in order.
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match open.as_mut() {
            None => {
                if let Some(tag) = trimmed.strip_prefix("```") {
                    open = Some((tag.trim().to_ascii_lowercase(), Vec::new()));
                }
            }
            Some((_, body)) => {
                if trimmed.trim_end() == "```" {
                    if let Some((lang, body)) = open.take() {
                        out.push((lang, body.join("\n") + "\n"));
                    }
                } else {
                    body.push(line);
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_python_block_among_others() {
        let answer = "Here:\n```text\nnotes\n```\n```python\nimport numpy as np\ndef generate(seed):\n    return []\n```\nDone.";
        let s = GeneratorScript::from_answer(answer).unwrap();
        assert_eq!(
            s.code,
            "import numpy as np\ndef generate(seed):\n    return []\n"
        );
    }

    #[test]
    fn bare_code_is_accepted_and_missing_generate_is_refused() {
        assert!(GeneratorScript::from_answer("def generate(seed):\n    return []").is_ok());
        let err = GeneratorScript::from_answer("```python\nprint(1)\n```").unwrap_err();
        assert!(err.contains("def generate"), "{err}");
        let err = GeneratorScript::from_answer("I cannot do that.").unwrap_err();
        assert!(err.contains("no ```python"), "{err}");
    }
}
