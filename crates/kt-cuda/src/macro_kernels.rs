//! Kernels defined through a macro (`#define ELEMENTWISE(name, op) __global__ void name(float *x) {…}`,
//! then `ELEMENTWISE(relu, fmaxf(v, 0))`): the grammar sees a call, not a kernel, so kt cannot analyse them
//! as written. They are listed — by name, macro and line — so that a report never hides them and asking
//! for one says why kt refuses it and what to do.

use serde::{Deserialize, Serialize};

use crate::lexer::{Define, Token, TokenKind, tokenize};
use crate::location::Location;

/// A kernel a macro invocation defines.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MacroKernel {
    pub name: String,
    /// The macro whose expansion is the kernel.
    pub macro_name: String,
    /// Where the invocation is.
    pub location: Location,
}

/// Every kernel that an invocation of a `__global__`-defining macro in `source` defines, in order.
pub(crate) fn find(
    source: &str,
    defines: &[Define],
    location_of: impl Fn(usize) -> Location,
) -> Vec<MacroKernel> {
    let makers: Vec<(&Define, Vec<String>, Vec<String>)> = defines
        .iter()
        .filter_map(|d| {
            // the declarator: the word before the first `(` after `__global__`
            let name_words = declarator(&d.body[d.body.find("__global__")?..])?;
            Some((d, macro_params(source, d), name_words))
        })
        .collect();
    if makers.is_empty() {
        return Vec::new();
    }
    let tokens = tokenize(source);
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.kind != TokenKind::Ident || t.directive.is_some() {
            continue;
        }
        let Some((d, params, name_words)) = makers.iter().find(|(d, ..)| d.name == t.text(source))
        else {
            continue;
        };
        let args = if d.function_like {
            match invocation_args(source, &tokens[i + 1..]) {
                Some(a) => a,
                None => continue,
            }
        } else {
            Vec::new()
        };
        let name: String = name_words
            .iter()
            .map(|w| {
                params
                    .iter()
                    .position(|p| p == w)
                    .and_then(|k| args.get(k).cloned())
                    .unwrap_or_else(|| w.clone())
            })
            .collect();
        if !name.is_empty() && !out.iter().any(|m: &MacroKernel| m.name == name) {
            out.push(MacroKernel {
                name,
                macro_name: d.name.clone(),
                location: location_of(t.start),
            });
        }
    }
    out
}

/// The byte ranges of the invocations of kernel-defining macros outside directives (the name through its
/// closing parenthesis): text the grammar cannot read as a declaration, and that swallows the next one
/// when it has no `;` — kt blanks them before parsing (the kernels they define are listed by [`find`]).
pub(crate) fn invocation_spans(
    source: &str,
    tokens: &[Token],
    defines: &[Define],
) -> Vec<(usize, usize)> {
    let makers: Vec<&Define> = defines
        .iter()
        .filter(|d| {
            d.body
                .find("__global__")
                .is_some_and(|at| declarator(&d.body[at..]).is_some())
        })
        .collect();
    let mut out = Vec::new();
    if makers.is_empty() {
        return out;
    }
    for (i, t) in tokens.iter().enumerate() {
        if t.kind != TokenKind::Ident || t.directive.is_some() {
            continue;
        }
        let Some(d) = makers.iter().find(|d| d.name == t.text(source)) else {
            continue;
        };
        if !d.function_like {
            out.push((t.start, t.end));
            continue;
        }
        let mut depth = 0;
        for u in &tokens[i + 1..] {
            match u.text(source) {
                "(" => depth += 1,
                ")" => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((t.start, u.end));
                        break;
                    }
                }
                _ if depth == 0 => break,
                _ => {}
            }
        }
    }
    out
}

/// The kernel's name in a body that starts at `__global__`: the word (or `a ## b` pieces) before the
/// first `(`, as pieces to paste.
fn declarator(from_global: &str) -> Option<Vec<String>> {
    // a body's tokens are joined by spaces: `kernel_ # # n` is the paste `kernel_##n`
    let head = from_global[..from_global.find('(')?].replace("# #", "##");
    let head = head.trim_end();
    let mut pieces: Vec<String> = Vec::new();
    let mut rest = head;
    loop {
        let start = rest
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        pieces.insert(0, rest[start..].to_string());
        let before = rest[..start].trim_end();
        match before.strip_suffix("##") {
            Some(b) => rest = b.trim_end(),
            None => break,
        }
    }
    pieces.retain(|p| !p.is_empty());
    (!pieces.is_empty()).then_some(pieces)
}

/// A function-like macro's parameter names, read from its directive.
fn macro_params(source: &str, d: &Define) -> Vec<String> {
    if !d.function_like {
        return Vec::new();
    }
    let after = &source[d.name_end..d.directive_end];
    let Some(close) = after.find(')') else {
        return Vec::new();
    };
    after[..close]
        .trim_start_matches('(')
        .split(',')
        .map(|p| p.trim().to_string())
        .collect()
}

/// The arguments of an invocation whose `(` is the first of `tokens`, split at top-level commas.
fn invocation_args(source: &str, tokens: &[Token]) -> Option<Vec<String>> {
    let open = tokens.first()?;
    if open.text(source) != "(" {
        return None;
    }
    let mut depth = 0;
    let mut args = Vec::new();
    let mut start = open.end;
    for t in tokens {
        match t.text(source) {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    args.push(source[start..t.start].trim().to_string());
                    return Some(args);
                }
            }
            "," if depth == 1 => {
                args.push(source[start..t.start].trim().to_string());
                start = t.end;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::defines;

    fn kernels(src: &str) -> Vec<(String, String, usize)> {
        let tokens = tokenize(src);
        let d = defines(src, &tokens);
        let line_of = |at: usize| Location {
            line: src[..at].matches('\n').count() + 1,
            column: 1,
        };
        find(src, &d, line_of)
            .into_iter()
            .map(|m| (m.name, m.macro_name, m.location.line))
            .collect()
    }

    #[test]
    fn kernels_made_by_macros_are_named_by_their_invocations() {
        let src = "#define UNARY(name, op) \\\n  __global__ void name(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = op(x[i]); }\nUNARY(relu_k, fabsf)\nUNARY(neg_k, -)\n#define PASTE(n) __global__ void kernel_##n(float *x) {}\nPASTE(one)\n__global__ void plain(float *x) {}\n";
        assert_eq!(
            kernels(src),
            vec![
                ("relu_k".to_string(), "UNARY".to_string(), 3),
                ("neg_k".to_string(), "UNARY".to_string(), 4),
                ("kernel_one".to_string(), "PASTE".to_string(), 6),
            ]
        );
    }

    #[test]
    fn macros_that_only_qualify_define_no_kernel() {
        assert!(kernels("#define KERNEL __global__\nKERNEL void k(float *x) {}\n").is_empty());
    }
}
