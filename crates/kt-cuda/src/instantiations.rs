//! The template arguments a file's own host code launches a kernel with (`reduce4<T, 256><<<…>>>`,
//! `MatrixMulCUDA<32><<<…>>>`): the instantiations that exist, which make a template kernel's space or
//! its default when the user names none.

use std::collections::BTreeSet;

/// Every distinct argument list `kernel` is launched with (`kernel<args><<<`), in first-seen order, from
/// code outside comments and strings. Arguments are as written, trimmed.
pub fn host_instantiations(source: &str, kernel: &str) -> Vec<Vec<String>> {
    let code = code_only(source);
    let bytes = code.as_bytes();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(kernel) {
        let at = from + found;
        from = at + kernel.len();
        let word_before = at > 0 && is_word(bytes[at - 1]);
        let word_after = bytes.get(from).is_some_and(|&b| is_word(b));
        if word_before || word_after {
            continue;
        }
        let Some(args) = launch_arguments(&code[from..]) else {
            continue;
        };
        if seen.insert(args.clone()) {
            out.push(args);
        }
    }
    out
}

/// `source` with comments and string/char literals turned into spaces (offsets kept).
pub(crate) fn code_only(source: &str) -> String {
    use crate::lexer::{TokenKind, tokenize};
    let mut bytes = source.as_bytes().to_vec();
    for t in tokenize(source) {
        if matches!(
            t.kind,
            TokenKind::Comment | TokenKind::Str | TokenKind::Char
        ) {
            for b in &mut bytes[t.start..t.end] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
    }
    String::from_utf8(bytes).unwrap_or_else(|_| source.to_string())
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `<a, b<c>, (d > e)> <<<` at the start of `rest` (after spaces) → [a, b<c>, (d > e)].
fn launch_arguments(rest: &str) -> Option<Vec<String>> {
    let trimmed = rest.trim_start();
    if !trimmed.starts_with('<') || trimmed.starts_with("<<<") {
        return None;
    }
    let mut depth = 0i32;
    let mut parens = 0i32;
    let mut args = Vec::new();
    let mut current = String::new();
    for (i, c) in trimmed.char_indices() {
        match c {
            '(' | '[' => parens += 1,
            ')' | ']' => parens -= 1,
            '<' if parens == 0 => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            '>' if parens == 0 => {
                depth -= 1;
                if depth == 0 {
                    args.push(current.trim().to_string());
                    let after = trimmed[i + 1..].trim_start();
                    return after.starts_with("<<<").then_some(args);
                }
            }
            ',' if depth == 1 && parens == 0 => {
                args.push(std::mem::take(&mut current).trim().to_string());
                continue;
            }
            ';' | '{' | '}' => return None,
            _ => {}
        }
        current.push(c);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_give_the_instantiations_and_nothing_else_does() {
        let src = r#"
template <class T, unsigned int blockSize, bool nIsPow2> __global__ void reduce6(T *a, T *b, unsigned n) {}
template <class T> void reduce(int threads, T *a, T *b) {
    switch (threads) {
    case 512: reduce6<T, 512, true><<<g, b, s>>>(a, b, n); break;
    case 256: reduce6<T, 256, true><<<g, b, s>>>(a, b, n); break;
    }
    // reduce6<T, 64, true><<<g, b>>>(a, b, n);
    reduce6<T, 256, true> <<< g, b, s >>>(a, b, n);
    if (reduce6_count < 2) {}
    auto p = &reduce6<float, 32, false>;
}
"#;
        assert_eq!(
            host_instantiations(src, "reduce6"),
            vec![
                vec!["T".to_string(), "512".into(), "true".into()],
                vec!["T".to_string(), "256".into(), "true".into()],
            ]
        );
    }

    #[test]
    fn nested_template_arguments_and_expressions_stay_whole() {
        let src = "k<Pair<int, float>, (N > 4), 16><<<1, 1>>>(x);\nk<<<1, 1>>>(x);";
        assert_eq!(
            host_instantiations(src, "k"),
            vec![vec![
                "Pair<int, float>".to_string(),
                "(N > 4)".into(),
                "16".into()
            ]]
        );
    }
}
