//! Where things are in host code text: the launching function's body, brackets, `dim3(…)`, `sizeof`, and a grid
//! expression split into what it divides and by what. Plain text work on code whose comments and strings are
//! already blanked.

use crate::host_expr::{ceil_division, eval_int, normalized, split_top};

/// Where the top-level block around the end of `prefix` opens (the launching function's body), or 0.
pub(crate) fn function_start(prefix: &str) -> usize {
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in prefix.char_indices() {
        match c {
            '{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    start
}

/// `text` with each `sizeof(TYPE)` of a built-in type replaced by its bytes.
pub(crate) fn sizes_of(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("sizeof") {
        let after = rest[at + "sizeof".len()..].trim_start();
        let value = after
            .starts_with('(')
            .then(|| matching(after))
            .flatten()
            .and_then(|close| {
                let bytes = eval_int(&format!("sizeof{}", &after[..=close]), &|_| None)?;
                Some((bytes, close))
            });
        out.push_str(&rest[..at]);
        match value {
            Some((bytes, close)) => {
                out.push_str(&bytes.to_string());
                rest = &after[close + 1..];
            }
            None => {
                out.push_str("sizeof");
                rest = &rest[at + "sizeof".len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// How many `{` are open at the end of `prefix`.
pub(crate) fn brace_depth(prefix: &str) -> i32 {
    prefix.chars().fold(0, |d, c| match c {
        '{' => d + 1,
        '}' => d - 1,
        _ => d,
    })
}

/// `dim3(a, b)` / `dim3{a, b}` → [a, b].
pub(crate) fn inline_dim3(text: &str) -> Option<Vec<String>> {
    let rest = text.strip_prefix("dim3")?.trim_start();
    let close = matching(rest)?;
    (close == rest.len() - 1).then(|| split_top(&rest[1..close], ','))
}

/// The index of the bracket closing the one `text` starts with.
pub(crate) fn matching(text: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `ceil_div(P, D)`, `(P + D - 1) / D`, `(P - 1) / D + 1`, `P / D` → (P, D).
pub(crate) fn ceil_parts(grid: &str) -> Option<(String, String)> {
    let g = normalized(grid);
    if let Some(open) = g.find('(')
        && ceil_division(g[..open].trim())
        && matching(&g[open..]) == Some(g.len() - open - 1)
    {
        let args = split_top(&g[open + 1..g.len() - 1], ',');
        if let [p, d] = args.as_slice() {
            return Some((normalized(p), normalized(d)));
        }
    }
    let (num, den) = match split_top(&g, '/').as_slice() {
        [n, d] => (normalized(n), normalized(d)),
        _ => return None,
    };
    let flat = |s: &str| s.replace(' ', "");
    // `(P + D - 1) / D`
    let (flat_num, flat_den) = (flat(&num), flat(&den));
    if let Some(p) = flat_num
        .strip_suffix(&format!("+{flat_den}-1"))
        .or_else(|| flat_num.strip_suffix(&format!("+({flat_den})-1")))
    {
        return Some((normalized(p), den));
    }
    // `(P - 1) / D + 1` reads as `(P - 1)` over `D + 1`
    if let Some(d) = flat_den.strip_suffix("+1")
        && let Some(p) = flat_num.strip_suffix("-1")
    {
        return Some((normalized(p), normalized(d)));
    }
    Some((num, den))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_split_into_problem_and_divisor_in_each_spelling() {
        let pair = |p: &str, d: &str| Some((p.to_string(), d.to_string()));
        assert_eq!(ceil_parts("ceil_div(N, bs * 8)"), pair("N", "bs * 8"));
        assert_eq!(ceil_parts("(n + BS - 1) / BS"), pair("n", "BS"));
        assert_eq!(ceil_parts("(n - 1) / 256 + 1"), pair("n", "256"));
        assert_eq!(ceil_parts("w / 16"), pair("w", "16"));
        assert_eq!(ceil_parts("N"), None);
    }

    #[test]
    fn bodies_brackets_dim3_and_sizeof_are_found() {
        let code = "int g = 1;\nvoid a() { int x = 1; }\nvoid b(int n) { if (n) { k<<<1, 1>>>(); ";
        let body = function_start(code);
        assert!(code[body..].starts_with("{ if (n)"), "{}", &code[body..]);
        assert_eq!(brace_depth(code), 2);
        assert_eq!(matching("(a, (b)) + c"), Some(7));
        assert_eq!(
            inline_dim3("dim3(a, b / 2)"),
            Some(vec!["a".to_string(), "b / 2".to_string()])
        );
        assert_eq!(inline_dim3("dim3(a) + 1"), None);
        assert_eq!(
            sizes_of("2 * bs * sizeof(float) + sizeof(MyType)"),
            "2 * bs * 4 + sizeof(MyType)"
        );
    }
}
