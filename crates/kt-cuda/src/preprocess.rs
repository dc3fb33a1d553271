//! Before tree-sitter sees the source, object-like macros that stand for qualifiers or builtin types
//! (`#define RESTRICT __restrict__`, `#define DEVICE __device__ __forceinline__`, `#define real float`) and
//! those that stand for statements (statement_macros.rs) are replaced by their bodies: the grammar does not run the preprocessor, and such macros in a declaration
//! otherwise become ERROR nodes or swallow the parameter name. Every other macro stays as written, so that
//! kt can still report which macros a kernel uses. An offset map turns positions in the substituted text back
//! into positions in what the user wrote.

use std::collections::HashMap;

use crate::lexer::{self, Define, Token, TokenKind};
use crate::location::Location;

/// Words a substitutable macro body may consist of.
const QUALIFIER_WORDS: &[&str] = &[
    "const",
    "volatile",
    "restrict",
    "__restrict__",
    "__restrict",
    "__device__",
    "__global__",
    "__host__",
    "__forceinline__",
    "__noinline__",
    "__inline__",
    "inline",
    "static",
    "extern",
    "__shared__",
    "__constant__",
    "__managed__",
    "unsigned",
    "signed",
    "int",
    "short",
    "long",
    "char",
    "float",
    "double",
    "bool",
    "void",
];

/// `original` with what a compiler takes but the grammar cannot read turned into spaces of the same length
/// (offsets do not move): every `#pragma` that stands between a statement's head and its body (`for (…)` /
/// `while (…)` / `if (…)` / `else` / `do`, then `#pragma unroll`, then an unbraced body — the grammar knows
/// directives only between statements and would make the loop an ERROR node, costing the kernel), and the
/// `blanked` ranges (invocations of kernel-defining macros).
fn blank_for_the_grammar(original: &str, tokens: &[Token], blanked: &[(usize, usize)]) -> String {
    let mut bytes = original.as_bytes().to_vec();
    for &(s, e) in blanked {
        for b in &mut bytes[s..e] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    let mut previous: Option<&Token> = None;
    for (i, t) in tokens.iter().enumerate() {
        if t.directive == Some(i)
            && tokens
                .get(i + 1)
                .is_some_and(|n| n.directive == Some(i) && n.text(original) == "pragma")
            && previous.is_some_and(|p| matches!(p.text(original), ")" | "else" | "do"))
        {
            let end = tokens[i..]
                .iter()
                .take_while(|x| x.directive == Some(i))
                .last()
                .map_or(t.end, |x| x.end);
            for b in &mut bytes[t.start..end] {
                if *b != b'\n' && *b != b'\r' {
                    *b = b' ';
                }
            }
        }
        if t.directive.is_none() && t.kind != TokenKind::Comment {
            previous = Some(t);
        }
    }
    // only ASCII bytes were replaced, by ASCII spaces: still UTF-8
    String::from_utf8(bytes).unwrap_or_else(|_| original.to_string())
}

/// The source as tree-sitter parses it, with the way back to the user's text.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub original: String,
    pub text: String,
    pub defines: Vec<Define>,
    /// (new_start, new_end, old_start, old_end) for every substitution, sorted.
    edits: Vec<(usize, usize, usize, usize)>,
    line_starts: Vec<usize>,
}

impl Prepared {
    pub fn new(original: &str) -> Self {
        Self::build(original, false)
    }

    /// As `new`, with one branch of every `#if` group left for the grammar (conditional_branches.rs): the
    /// second try where conditionals inside statements made the first parse fail.
    pub fn with_one_branch_per_conditional(original: &str) -> Self {
        Self::build(original, true)
    }

    fn build(original: &str, one_branch_per_conditional: bool) -> Self {
        let tokens = lexer::tokenize(original);
        let defines = lexer::defines(original, &tokens);
        let mut expansions = substitutable(&defines);
        for (name, body) in crate::statement_macros::statement_expansions(&defines) {
            expansions.entry(name).or_insert(body);
        }
        // like the preprocessor, a macro applies from its #define to its #undef (if any)
        let scope: HashMap<&str, (usize, usize)> = defines
            .iter()
            .filter(|d| expansions.contains_key(&d.name))
            .map(|d| {
                (
                    d.name.as_str(),
                    (
                        d.directive_end,
                        undef_position(original, &tokens, &d.name, d.directive_end),
                    ),
                )
            })
            .collect();
        let macro_kernels = crate::macro_kernels::invocation_spans(original, &tokens, &defines);
        let mut blanked = macro_kernels;
        if one_branch_per_conditional {
            blanked.extend(crate::conditional_branches::all_but_one_branch(
                original, &tokens,
            ));
        }
        let unsplit = blank_for_the_grammar(original, &tokens, &blanked);
        let mut text = String::with_capacity(original.len());
        let mut edits = Vec::new();
        let mut copied = 0;
        for t in &tokens {
            if t.kind != TokenKind::Ident
                || t.directive.is_some()
                || blanked.iter().any(|&(s, e)| t.start >= s && t.end <= e)
            {
                continue;
            }
            let in_scope = scope
                .get(t.text(original))
                .is_some_and(|&(from, to)| t.start >= from && t.start < to);
            let builtin = builtin_spelling(t.text(original))
                .filter(|_| !defines.iter().any(|d| d.name == t.text(original)));
            if let Some(body) = (in_scope)
                .then(|| expansions.get(t.text(original)).map(String::as_str))
                .flatten()
                .filter(|body| text.len() + body.len() <= MAX_GRAMMAR_TEXT.max(2 * original.len()))
                .or(builtin)
            {
                text.push_str(&unsplit[copied..t.start]);
                let new_start = text.len();
                // an empty body still leaves a space so neighbouring tokens do not fuse
                text.push_str(if body.is_empty() { " " } else { body });
                edits.push((new_start, text.len(), t.start, t.end));
                copied = t.end;
            }
        }
        text.push_str(&unsplit[copied..]);
        let line_starts = std::iter::once(0)
            .chain(original.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Prepared {
            original: original.to_string(),
            text,
            defines,
            edits,
            line_starts,
        }
    }

    /// Byte offset in the original source for a byte offset in the substituted text. Offsets inside a
    /// substitution map to the start of the macro name.
    pub fn original_offset(&self, pos: usize) -> usize {
        let idx = self.edits.partition_point(|e| e.0 <= pos);
        if idx == 0 {
            return pos.min(self.original.len());
        }
        let (new_start, new_end, old_start, old_end) = self.edits[idx - 1];
        if pos < new_end {
            old_start + (pos - new_start).min(old_end - old_start)
        } else {
            (old_end + (pos - new_end)).min(self.original.len())
        }
    }

    /// Names of the qualifier macros substituted inside a byte range of the substituted text.
    pub fn substituted_macros(&self, start: usize, end: usize) -> Vec<String> {
        self.edits
            .iter()
            .filter(|e| e.0 >= start && e.1 <= end)
            .map(|e| self.original[e.2..e.3].to_string())
            .collect()
    }

    /// Original text for a byte range of the substituted text.
    pub fn original_text(&self, start: usize, end: usize) -> &str {
        let (s, mut e) = (self.original_offset(start), self.original_offset(end));
        // an end that falls right after a substitution maps to the macro's end
        if let Some(edit) = self.edits.iter().find(|x| x.1 == end) {
            e = edit.3;
        }
        &self.original[s..e.max(s)]
    }

    /// 1-based line and column (in characters) of an original byte offset.
    pub fn location_of_original(&self, offset: usize) -> Location {
        let line_idx = self
            .line_starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.line_starts[line_idx];
        let column = self
            .original
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count())
            + 1;
        Location {
            line: line_idx + 1,
            column,
        }
    }

    pub fn location(&self, pos: usize) -> Location {
        self.location_of_original(self.original_offset(pos))
    }

    /// The text of a 1-based original line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return "";
        };
        let end = self.original[start..]
            .find('\n')
            .map_or(self.original.len(), |n| start + n);
        self.original[start..end].trim_end_matches('\r')
    }
}

/// Size past which macro expansions stop (statement macros repeated thousands of times): the grammar then
/// reads the rest as written, and the parse time stays bounded by the input's size.
const MAX_GRAMMAR_TEXT: usize = 64 << 20;

/// CUDA keywords the grammar does not know, spelled as the C++ it does: `__align__(8)` is `alignas(8)`
/// (the grammar rejects `struct __align__(8) Pair`, and one such struct hid every kernel of a file).
fn builtin_spelling(word: &str) -> Option<&'static str> {
    match word {
        "__align__" => Some("alignas"),
        _ => None,
    }
}

fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where `#undef name` after `after` starts, or the end of the source.
fn undef_position(source: &str, tokens: &[Token], name: &str, after: usize) -> usize {
    tokens
        .iter()
        .enumerate()
        .filter(|(i, t)| t.directive == Some(*i) && t.start >= after)
        .find(|(i, _)| {
            tokens.get(i + 1).is_some_and(|k| k.text(source) == "undef")
                && tokens.get(i + 2).is_some_and(|n| n.text(source) == name)
        })
        .map_or(source.len(), |(_, t)| t.start)
}

/// Object-like macros whose body is made of qualifier/type words (after resolving macros that name other
/// such macros), mapped to their full expansion.
fn substitutable(defines: &[Define]) -> HashMap<String, String> {
    let bodies: HashMap<&str, &str> = defines
        .iter()
        .filter(|d| !d.function_like)
        .map(|d| (d.name.as_str(), d.body.as_str()))
        .collect();
    // macros defined more than once (`#ifdef` branches) are ambiguous: leave them alone
    let mut seen = HashMap::new();
    for d in defines {
        *seen.entry(d.name.as_str()).or_insert(0) += 1;
    }
    let mut out = HashMap::new();
    for (&name, _) in bodies.iter().filter(|(n, _)| seen.get(*n) == Some(&1)) {
        if let Some(expansion) = expand(name, &bodies, 0) {
            out.insert(name.to_string(), expansion);
        }
    }
    out
}

fn expand(name: &str, bodies: &HashMap<&str, &str>, depth: usize) -> Option<String> {
    if depth > 8 {
        return None;
    }
    let body = bodies.get(name)?;
    // a body that is one identifier (`#define VEC float4`, `#define idx_t int64_t`) names a type or another
    // name: substituting it is what the preprocessor does and lets the grammar see the real type
    let single = body.split_whitespace().count() == 1;
    let mut words = Vec::new();
    for word in body.split_whitespace() {
        let linkage = word == "\"C\"" && words.last().is_some_and(|w| w == "extern");
        if QUALIFIER_WORDS.contains(&word) || linkage {
            words.push(word.to_string());
        } else if bodies.contains_key(word) && word != name {
            words.push(expand(word, bodies, depth + 1)?);
        } else if single && is_identifier(word) && word != name {
            words.push(word.to_string());
        } else {
            return None;
        }
    }
    Some(words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifier_macros_are_substituted_and_positions_map_back() {
        let src = "#define R __restrict__\n#define N 16\nvoid f(float *R x, int y[N]);\n";
        let p = Prepared::new(src);
        assert_eq!(
            p.text,
            "#define R __restrict__\n#define N 16\nvoid f(float *__restrict__ x, int y[N]);\n"
        );
        let x_new = p.text.find(" x,").unwrap() + 1;
        let x_old = src.find(" x,").unwrap() + 1;
        assert_eq!(p.original_offset(x_new), x_old);
        assert_eq!(
            p.location(x_new),
            Location {
                line: 3,
                column: 17
            }
        );
        let r_new = p.text.find("__restrict__ x").unwrap();
        assert_eq!(p.original_text(r_new, r_new + "__restrict__".len()), "R");
    }

    #[test]
    fn macros_naming_macros_expand_fully_but_values_do_not() {
        let src = "#define A __device__\n#define B A __forceinline__\n#define V 3\nB int g() { return V; }\n";
        let p = Prepared::new(src);
        assert!(
            p.text
                .contains("__device__ __forceinline__ int g() { return V; }")
        );
    }

    #[test]
    fn a_macro_applies_only_between_its_define_and_its_undef() {
        let src = "int R;\n#define R __restrict__\nvoid f(float *R a);\n#undef R\nint R2 = R;\n";
        let p = Prepared::new(src);
        assert_eq!(
            p.text,
            "int R;\n#define R __restrict__\nvoid f(float *__restrict__ a);\n#undef R\nint R2 = R;\n"
        );
    }

    #[test]
    fn macro_names_in_comments_and_strings_are_untouched() {
        let src = "#define R __restrict__\n// R here\nconst char *s = \"R\";\n";
        assert_eq!(Prepared::new(src).text, src);
    }

    #[test]
    fn a_pragma_between_a_loop_head_and_its_unbraced_body_is_hidden_from_the_grammar() {
        let src = "__global__ void k(float *a) {\n  for (int i = 0; i < 4; i++)\n#pragma unroll\n    a[i] = 0;\n#pragma unroll\n  for (;;) {}\n}\n";
        let p = Prepared::new(src);
        assert_eq!(p.text.len(), src.len());
        // the one after `)` is blanked, the one between statements is kept
        assert_eq!(p.text.matches("#pragma unroll").count(), 1);
        assert!(
            p.text.contains("i++)\n              \n    a[i] = 0;"),
            "{}",
            p.text
        );
        assert_eq!(p.original, src);
    }
}
