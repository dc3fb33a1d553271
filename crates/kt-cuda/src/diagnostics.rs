//! Syntax problems with the user's positions, and the judgement whether a file without kernels is CUDA at all.

use tree_sitter::Node;

use crate::error::SyntaxProblem;
use crate::preprocess::Prepared;

pub(crate) fn syntax_problems(prepared: &Prepared, root: Node) -> Vec<SyntaxProblem> {
    let mut out = Vec::new();
    collect_problems(prepared, root, &mut out);
    out
}

fn collect_problems(prepared: &Prepared, node: Node, out: &mut Vec<SyntaxProblem>) {
    if !node.has_error() {
        return;
    }
    if node.is_error() || node.is_missing() {
        let location = prepared.location(node.start_byte());
        let message = if node.is_missing() {
            format!("missing `{}`", node.kind())
        } else {
            let snippet: String = prepared
                .original_text(node.start_byte(), node.end_byte())
                .chars()
                .take(40)
                .collect();
            format!(
                "unexpected `{}`",
                snippet.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        };
        out.push(SyntaxProblem {
            location,
            message,
            line_text: prepared.line_text(location.line).to_string(),
            origin_file: None,
        });
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect_problems(prepared, child, out);
    }
}

/// When a file has no kernel: is it CUDA at all? Binary data, Python and text that the C++ grammar mostly
/// rejects get a NotCuda error; a clean C/C++ file without kernels falls through to NoKernel.
pub(crate) fn not_cuda_reason(
    prepared: &Prepared,
    root: Node,
    problems: &[SyntaxProblem],
) -> Option<String> {
    let text = &prepared.original;
    if text.trim().is_empty() {
        return Some("it is empty".into());
    }
    let code_lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let pythonic = code_lines
        .iter()
        .filter(|l| {
            (l.starts_with("def ")
                || l.starts_with("class ")
                || l.starts_with("if ")
                || l.starts_with("for "))
                && l.ends_with(':')
                || l.starts_with("import ")
                || (l.starts_with("from ") && l.contains(" import "))
        })
        .count();
    if pythonic > 0 && pythonic * 5 >= code_lines.len().min(25) {
        return Some("it looks like Python (def/import lines)".into());
    }
    if code_lines.first().is_some_and(|l| l.starts_with("#!")) {
        return Some("it starts with a #! line (a script?)".into());
    }
    let mut error_bytes = 0;
    error_extent(root, &mut error_bytes);
    if !problems.is_empty() && error_bytes * 3 > prepared.text.trim().len() {
        return Some(format!(
            "the C++/CUDA grammar rejects most of it ({} syntax errors, first at line {})",
            problems.len(),
            problems[0].location.line
        ));
    }
    None
}

/// Bytes of the source under ERROR nodes (how much of the file the grammar rejects).
pub(crate) fn error_extent(node: Node, total: &mut usize) {
    if node.is_error() {
        *total += node.end_byte() - node.start_byte();
        return;
    }
    if !node.has_error() {
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        error_extent(child, total);
    }
}
