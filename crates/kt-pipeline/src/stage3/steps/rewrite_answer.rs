//! Reading a rewrite out of an answer as models give it: the JSON (read leniently by kt-llm), or, when there
//! is no usable JSON but the answer holds CUDA code that defines the kernel, that code alone (the last such
//! block), whose parameters are then asked for in one short follow-up question (the code-first fallback).

use crate::stage3::answers::KernelRewrite;

/// What an answer to a rewrite prompt gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReadRewrite {
    /// The JSON answer, with the repairs it needed.
    Json(Box<KernelRewrite>, Vec<String>),
    /// No usable JSON, but this code defines the kernel.
    CodeOnly(String),
    /// Neither; why, for the re-ask.
    Unusable(String),
}

/// Reads `answer` for a rewrite of kernel `kernel`.
pub(crate) fn read_rewrite(answer: &str, kernel: &str) -> ReadRewrite {
    let schema = kt_llm::OutputSchema::of::<KernelRewrite>().schema;
    let error = match kt_llm::parse_lenient::<KernelRewrite>(answer, Some(&schema)) {
        Ok(l) if !l.value.code.trim().is_empty() => {
            return ReadRewrite::Json(Box::new(l.value), l.repairs);
        }
        Ok(_) => "the JSON answer has no code".to_string(),
        Err(e) => e.to_string(),
    };
    match last_block_defining(answer, kernel) {
        Some(code) => ReadRewrite::CodeOnly(code),
        None => ReadRewrite::Unusable(format!(
            "{error}; answer with the JSON asked for (the kernel's code in its `code` field)"
        )),
    }
}

/// The last fenced block (or, without fences, the whole answer) that defines `__global__` kernel `kernel`.
fn last_block_defining(answer: &str, kernel: &str) -> Option<String> {
    let defines = |code: &str| {
        kt_cuda::parse_tolerant(code).is_ok_and(|s| s.kernels.iter().any(|k| k.name == kernel))
    };
    let blocks = fenced_blocks(answer);
    if blocks.is_empty() {
        return defines(answer).then(|| answer.trim().to_string() + "\n");
    }
    blocks.into_iter().rev().find(|b| defines(b))
}

/// The contents of every ``` fenced block, in order (an unclosed last block runs to the end).
fn fenced_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some(String::new()),
            }
            continue;
        }
        if let Some(block) = current.as_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    blocks.extend(current);
    blocks
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const K: &str = "__global__ void scale(float* a, int n) { a[0] *= 2.0f; }";

    #[test]
    fn a_json_answer_is_read_as_json() {
        let answer = format!(
            "Here:\n```json\n{}\n```\n",
            serde_json::json!({"code": K, "parameters": []})
        );
        assert!(matches!(read_rewrite(&answer, "scale"), ReadRewrite::Json(r, _) if r.code == K));
    }

    #[test]
    fn code_without_json_is_taken_from_the_last_block_defining_the_kernel() {
        let answer = format!(
            "The original:\n```cuda\n{K}\n```\nThe new one, with TILE = 16 or 32:\n```cuda\n// new\n{K}\n```\n\
             And a helper:\n```cuda\n__device__ int f() {{ return 1; }}\n```\n"
        );
        match read_rewrite(&answer, "scale") {
            ReadRewrite::CodeOnly(code) => assert!(code.starts_with("// new"), "{code}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn prose_alone_is_unusable_with_the_reason() {
        match read_rewrite("I would tile the loop.", "scale") {
            ReadRewrite::Unusable(why) => assert!(why.contains("JSON"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
