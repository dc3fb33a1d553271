//! `#if` / `#else` inside a statement, as nvcc takes it and the grammar does not. tree-sitter knows preprocessor
//! conditionals only where each branch holds whole statements or declarations; real kernels (and model
//! rewrites) put them anywhere: an `else { … }` under `#if FAST`, a loop whose head differs per branch. The
//! grammar then makes the whole function an ERROR node and kt loses the kernel. Where that happens, kt parses
//! once more with one branch of every conditional group kept (the first, or the one after `#if 0`) and the
//! directives and the other branches blanked; the source itself, what kt compiles, is unchanged.

use crate::lexer::{Token, TokenKind};

/// A conditional directive's role in its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `#if`, `#ifdef`, `#ifndef`; `never` for `#if 0`.
    Open {
        never: bool,
    },
    /// `#elif`, `#else`.
    Alternative,
    Close,
}

/// A directive's byte range (from `#` to the end of its last token) and role.
fn conditional_directives(original: &str, tokens: &[Token]) -> Vec<(usize, usize, Role)> {
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.directive != Some(i) {
            continue;
        }
        let words: Vec<&str> = tokens[i + 1..]
            .iter()
            .take_while(|x| x.directive == Some(i))
            .filter(|x| x.kind != TokenKind::Comment)
            .map(|x| x.text(original))
            .collect();
        let end = tokens[i..]
            .iter()
            .take_while(|x| x.directive == Some(i))
            .last()
            .map_or(t.end, |x| x.end);
        let role = match words.first().copied() {
            Some("if") => Role::Open {
                never: words.get(1..) == Some(&["0"][..]),
            },
            Some("ifdef" | "ifndef") => Role::Open { never: false },
            Some("elif" | "elifdef" | "elifndef" | "else") => Role::Alternative,
            Some("endif") => Role::Close,
            _ => continue,
        };
        out.push((t.start, end, role));
    }
    out
}

/// Byte ranges to blank so that one branch of each conditional group is left: every conditional directive,
/// and the text of every branch not kept. Unbalanced groups (an `#endif` too many, a missing one) end at the
/// file's end.
pub(crate) fn all_but_one_branch(original: &str, tokens: &[Token]) -> Vec<(usize, usize)> {
    /// One open group: whether a branch has been kept, where the branch being skipped began, and whether the
    /// whole group sits in a skipped branch of an outer one.
    struct Group {
        kept: bool,
        skipping_from: Option<usize>,
        inside_skip: bool,
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut blank = Vec::new();
    for (start, end, role) in conditional_directives(original, tokens) {
        blank.push((start, end));
        match role {
            Role::Open { never } => {
                let inside_skip = groups.iter().any(|g| g.skipping_from.is_some());
                groups.push(Group {
                    kept: !never && !inside_skip,
                    skipping_from: (never || inside_skip).then_some(end),
                    inside_skip,
                });
            }
            Role::Alternative => {
                if let Some(g) = groups.last_mut() {
                    if let Some(from) = g.skipping_from.take() {
                        blank.push((from, start));
                    }
                    if g.kept || g.inside_skip {
                        g.skipping_from = Some(end);
                    } else {
                        g.kept = true;
                    }
                }
            }
            Role::Close => {
                if let Some(g) = groups.pop()
                    && let Some(from) = g.skipping_from
                {
                    blank.push((from, start));
                }
            }
        }
    }
    for g in groups {
        if let Some(from) = g.skipping_from {
            blank.push((from, original.len()));
        }
    }
    blank.sort_unstable();
    blank
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::tokenize;

    fn kept(src: &str) -> String {
        let tokens = tokenize(src);
        let mut bytes = src.as_bytes().to_vec();
        for (s, e) in all_but_one_branch(src, &tokens) {
            for b in &mut bytes[s..e] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        String::from_utf8(bytes)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_first_branch_is_kept_and_the_directives_go() {
        let src = "a;\n#if FAST\nb;\n#elif SLOW\nc;\n#else\nd;\n#endif\ne;\n";
        assert_eq!(kept(src), "a; b; e;");
    }

    #[test]
    fn if_0_keeps_the_branch_after_it() {
        assert_eq!(kept("#if 0\nold;\n#else\nnew;\n#endif\n"), "new;");
        assert_eq!(kept("#if 0\nold;\n#endif\nx;\n"), "x;");
        assert_eq!(
            kept("#if 0 // the old way\nold;\n#else\nnew;\n#endif\n"),
            "new;"
        );
        assert_eq!(kept("#if 0 /* off */\nold;\n#endif\nx;\n"), "x;");
    }

    #[test]
    fn nested_groups_inside_a_skipped_branch_stay_skipped() {
        let src = "#if A\na;\n#else\n#if B\nb;\n#else\nc;\n#endif\n#endif\nz;\n";
        assert_eq!(kept(src), "a; z;");
        let src = "#ifdef A\n#ifndef B\nab;\n#else\nb;\n#endif\n#else\nn;\n#endif\n";
        assert_eq!(kept(src), "ab;");
    }

    #[test]
    fn an_else_under_a_conditional_parses_as_one_if_statement() {
        let src = "void f(int x) {\n if (x) { g(); }\n#if FAST\n else { h(); }\n#endif\n}\n";
        assert_eq!(kept(src), "void f(int x) { if (x) { g(); } else { h(); } }");
    }

    #[test]
    fn other_directives_and_unbalanced_groups() {
        assert_eq!(
            kept("#define A 1\n#pragma unroll\nx;\n"),
            "#define A 1 #pragma unroll x;"
        );
        assert_eq!(kept("#if A\na;\n#else\nb;\n"), "a;");
        assert_eq!(kept("a;\n#endif\nb;\n"), "a; b;");
    }
}
