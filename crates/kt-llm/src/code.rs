//! Pulling code out of an answer: the last fenced block tagged as CUDA/C++, or the only fenced block
//! ([`extract_code`]); or every block that may be kernel code, for callers that choose ([`code_blocks`]).

use crate::error::{LlmError, excerpt};

/// Fence languages accepted as kernel code.
const CODE_LANGS: [&str; 6] = ["cuda", "cu", "cpp", "c++", "cxx", "c"];

struct Fence<'a> {
    lang: String,
    body: &'a str,
}

/// Returns the code of the last ```cuda / ```cu / ```cpp / ```c++ / ```c block, or of the only fenced block
/// when none is tagged so. Errors with [`LlmError::NoCode`] when there is none, when the answer was cut off
/// inside a block, or when several untagged blocks make the choice ambiguous.
pub fn extract_code(text: &str) -> Result<String, LlmError> {
    let (fences, unclosed) = fenced_blocks(text);
    let no_code = |detail: String| LlmError::NoCode {
        node: None,
        detail,
        excerpt: excerpt(text),
    };
    if let Some(fence) = fences
        .iter()
        .rev()
        .find(|f| CODE_LANGS.contains(&f.lang.as_str()))
    {
        return Ok(fence.body.to_string());
    }
    if unclosed {
        return Err(no_code(
            "a fenced block is opened but never closed: the answer was probably cut off; raise max_tokens".into(),
        ));
    }
    match fences.as_slice() {
        [only] => Ok(only.body.to_string()),
        [] => Err(no_code(
            "the answer has no ``` fenced block; ask for the code inside ```cuda ... ```".into(),
        )),
        many => Err(no_code(format!(
            "{} fenced blocks ({}) and none tagged cuda/cpp/c++/cu: ask for the kernel in a ```cuda block",
            many.len(),
            many.iter()
                .map(|f| if f.lang.is_empty() {
                    "untagged"
                } else {
                    f.lang.as_str()
                })
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// A fenced block that may hold kernel code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    /// The fence's language in lower case (`cuda`, `cpp`, ...); `None` for an untagged fence.
    pub lang: Option<String>,
    pub code: String,
}

/// Every complete fenced block tagged cuda / cu / cpp / c++ / cxx / c, or untagged, in the order of the
/// answer, after thinking (`<think>…</think>`, also unterminated) is dropped. Blocks in other languages
/// (json, python, text) are left out. For a code-first fallback: the caller picks the block that defines its
/// kernel.
pub fn code_blocks(answer: &str) -> Vec<CodeBlock> {
    let text = crate::thinking::ThinkTags::default().strip(answer).answer;
    fenced_blocks(&text)
        .0
        .into_iter()
        .filter(|f| f.lang.is_empty() || CODE_LANGS.contains(&f.lang.as_str()))
        .map(|f| CodeBlock {
            lang: (!f.lang.is_empty()).then(|| f.lang.clone()),
            code: f.body.to_string(),
        })
        .collect()
}

/// All complete fenced blocks in order, and whether a block was left open at the end.
fn fenced_blocks(text: &str) -> (Vec<Fence<'_>>, bool) {
    let mut fences = Vec::new();
    let mut open: Option<(String, usize, usize)> = None; // (lang, body start byte, fence length)
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|&c| c == '`').count();
        match &open {
            None if ticks >= 3 => {
                let lang = trimmed[ticks..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                open = Some((lang, offset + line.len(), ticks));
            }
            Some((lang, start, len)) if ticks >= *len && trimmed[ticks..].trim().is_empty() => {
                fences.push(Fence {
                    lang: lang.clone(),
                    body: &text[*start..offset],
                });
                open = None;
            }
            _ => {}
        }
        offset += line.len();
    }
    (fences, open.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_cuda_block_wins_over_earlier_and_untagged_blocks() {
        let text = "Plan:\n```\nnot this\n```\n```cuda\nold\n```\nthen\n```cuda\n__global__ void k() {}\n```\n```python\nx\n```\n";
        assert_eq!(extract_code(text).unwrap(), "__global__ void k() {}\n");
    }

    #[test]
    fn cpp_and_cu_tags_count_as_code() {
        assert_eq!(extract_code("```C++\nint a;\n```").unwrap(), "int a;\n");
        assert_eq!(extract_code("```cu\nint b;\n```\n").unwrap(), "int b;\n");
    }

    #[test]
    fn the_only_block_is_taken_whatever_its_tag() {
        assert_eq!(
            extract_code("here:\n```\nint x;\n```\ndone").unwrap(),
            "int x;\n"
        );
    }

    #[test]
    fn answer_without_blocks_is_a_no_code_error() {
        let err = extract_code("I cannot do that.").unwrap_err();
        assert!(matches!(err, LlmError::NoCode { .. }), "{err}");
        assert!(err.to_string().contains("no ``` fenced block"));
    }

    #[test]
    fn cut_off_block_says_so() {
        let err = extract_code("```cuda\n__global__ void k(").unwrap_err();
        assert!(err.to_string().contains("cut off"), "{err}");
    }

    #[test]
    fn code_blocks_lists_code_and_untagged_fences_in_order_without_thinking() {
        let text = "<think>```cuda\ndraft\n```</think>\n```cuda\nold\n```\n```json\n{}\n```\n```\nplain\n```\n```CPP\nnew\n```\n";
        let blocks = code_blocks(text);
        let got: Vec<(Option<&str>, &str)> = blocks
            .iter()
            .map(|b| (b.lang.as_deref(), b.code.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some("cuda"), "old\n"),
                (None, "plain\n"),
                (Some("cpp"), "new\n")
            ]
        );
        assert!(code_blocks("no fences").is_empty());
    }

    #[test]
    fn several_untagged_blocks_are_ambiguous() {
        let err = extract_code("```\na\n```\n```text\nb\n```").unwrap_err();
        assert!(err.to_string().contains("2 fenced blocks"), "{err}");
    }
}
