//! Separating a model's thinking from its answer. Reasoning models wrap their thought in tags such as
//! `<think>…</think>`; the thought must not reach a JSON parser or a code extractor, but it is worth keeping in
//! the record, so it is returned separately.

use serde::{Deserialize, Serialize};

/// The tag pairs that enclose thinking. Default: `<think>`/`</think>` and `<thinking>`/`</thinking>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkTags {
    pub pairs: Vec<(String, String)>,
}

impl Default for ThinkTags {
    fn default() -> Self {
        Self {
            pairs: vec![
                ("<think>".into(), "</think>".into()),
                ("<thinking>".into(), "</thinking>".into()),
            ],
        }
    }
}

/// An answer split into what the model said and what it thought.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stripped {
    pub answer: String,
    /// All thought passages joined with blank lines, or `None` when there was none.
    pub thought: Option<String>,
}

impl ThinkTags {
    pub fn new(open: impl Into<String>, close: impl Into<String>) -> Self {
        Self {
            pairs: vec![(open.into(), close.into())],
        }
    }

    /// Removes every tagged passage. Two shapes that real servers produce are handled too: a closing tag with
    /// no opening one (chat templates that put `<think>` in the prompt), where everything before it is thought;
    /// and an opening tag never closed (the answer was cut off while thinking), where everything after it is.
    pub fn strip(&self, text: &str) -> Stripped {
        let mut answer = text.to_string();
        let mut thoughts = Vec::new();
        for (open, close) in &self.pairs {
            if open.is_empty() || close.is_empty() {
                continue;
            }
            // Leading close tag without an opening one.
            if let Some(end) = answer.find(close.as_str()) {
                let before = &answer[..end];
                if !before.contains(open.as_str()) {
                    thoughts.push(before.trim().to_string());
                    answer = answer[end + close.len()..].to_string();
                }
            }
            while let Some(start) = answer.find(open.as_str()) {
                let body_start = start + open.len();
                match answer[body_start..].find(close.as_str()) {
                    Some(rel_end) => {
                        thoughts.push(answer[body_start..body_start + rel_end].trim().to_string());
                        answer = format!(
                            "{}{}",
                            &answer[..start],
                            &answer[body_start + rel_end + close.len()..]
                        );
                    }
                    None => {
                        thoughts.push(answer[body_start..].trim().to_string());
                        answer.truncate(start);
                    }
                }
            }
        }
        thoughts.retain(|t| !t.is_empty());
        Stripped {
            answer: answer.trim().to_string(),
            thought: (!thoughts.is_empty()).then(|| thoughts.join("\n\n")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_block_is_removed_and_kept_as_thought() {
        let s = ThinkTags::default().strip("<think>\nlet me see\n</think>\n\n{\"a\": 1}");
        assert_eq!(s.answer, "{\"a\": 1}");
        assert_eq!(s.thought.as_deref(), Some("let me see"));
    }

    #[test]
    fn several_blocks_and_custom_tags() {
        let tags = ThinkTags::new("[[", "]]");
        let s = tags.strip("a [[one]] b [[two]] c");
        assert_eq!(s.answer, "a  b  c");
        assert_eq!(s.thought.as_deref(), Some("one\n\ntwo"));
    }

    #[test]
    fn close_tag_without_open_means_leading_thought() {
        let s = ThinkTags::default().strip("hmm, tricky</think>answer");
        assert_eq!(s.answer, "answer");
        assert_eq!(s.thought.as_deref(), Some("hmm, tricky"));
    }

    #[test]
    fn unclosed_thinking_leaves_no_answer() {
        let s = ThinkTags::default().strip("<think>I was cut off");
        assert_eq!(s.answer, "");
        assert_eq!(s.thought.as_deref(), Some("I was cut off"));
    }

    #[test]
    fn text_without_tags_is_unchanged() {
        let s = ThinkTags::default().strip("  plain  ");
        assert_eq!(s.answer, "plain");
        assert_eq!(s.thought, None);
    }
}
