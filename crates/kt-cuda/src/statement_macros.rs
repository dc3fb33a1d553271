//! Object-like macros that stand for statements (`#define OP { s0 = s6*s5 + s28; … }`, `#define ADD1_OP s=v-s;`,
//! `#define ADD1_MOP20 ADD1_OP ADD1_OP …`). Benchmark code uses them where a statement goes, often with no
//! semicolon after them (`MADD1_MOP20 MADD1_MOP20`): the grammar cannot read a row of bare names as statements,
//! and one such loop made a whole kernel an ERROR node (SHOC's MaxFlops lost every kernel). They are expanded for
//! the grammar as the preprocessor would expand them; the user's text, and the unit kt compiles, stay as written.

use std::collections::HashMap;

use crate::lexer::Define;

/// Longest expansion of one macro; longer ones are left as written (the grammar then reports what it cannot read).
pub(crate) const MAX_EXPANSION_BYTES: usize = 1 << 20;

/// Statement macros among `defines` (object-like, defined once), each mapped to its full expansion. A body's
/// names are expanded through the statement macros defined before it (what such code does in practice), so one
/// pass in file order suffices: no recursion, no cycles, linear in the size of the expansions.
pub(crate) fn statement_expansions(defines: &[Define]) -> HashMap<String, String> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for d in defines {
        *count.entry(d.name.as_str()).or_insert(0) += 1;
    }
    let mut out: HashMap<String, String> = HashMap::new();
    // a macro defined more than once (`#ifdef` branches) is ambiguous: leave it alone
    for d in defines
        .iter()
        .filter(|d| !d.function_like && count.get(d.name.as_str()) == Some(&1))
    {
        if let Some(expansion) = expand(&d.body, &out)
            && is_statement(&expansion)
        {
            out.insert(d.name.clone(), expansion);
        }
    }
    out
}

/// `body` with the statement macros already known expanded; None past the size limit.
fn expand(body: &str, known: &HashMap<String, String>) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    for word in body.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(known.get(word).map_or(word, String::as_str));
        if out.len() > MAX_EXPANSION_BYTES {
            return None;
        }
    }
    Some(out)
}

/// Text that reads as one or more statements: it holds a `;`, ends with `;` or `}`, and its brackets balance
/// (an initializer `{1, 2, 3}` has no `;`; `x = 1` is an expression).
fn is_statement(text: &str) -> bool {
    let trimmed = text.trim_end();
    if !(trimmed.ends_with(';') || trimmed.ends_with('}')) || !trimmed.contains(';') {
        return false;
    }
    let mut depth: i64 = 0;
    for c in trimmed.chars() {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{defines, tokenize};

    /// Expansions with the lexer's token spacing removed.
    fn expansions(src: &str) -> HashMap<String, String> {
        statement_expansions(&defines(src, &tokenize(src)))
            .into_iter()
            .map(|(k, v)| (k, v.split_whitespace().collect()))
            .collect()
    }

    #[test]
    fn statement_macros_expand_through_the_macros_they_name() {
        let src = "#define OP1 s=v-s;\n#define OP2 OP1 t=v-t;\n#define BLOCK { OP2 OP2 }\n";
        let e = expansions(src);
        assert_eq!(e["OP1"], "s=v-s;");
        assert_eq!(e["OP2"], "s=v-s;t=v-t;");
        assert_eq!(e["BLOCK"], "{s=v-s;t=v-t;s=v-s;t=v-t;}");
    }

    #[test]
    fn values_initializers_and_expressions_are_not_statements() {
        let src = "#define N 256\n#define INIT {1, 2, 3}\n#define EXPR (a + b)\n#define OPEN {\n";
        assert!(expansions(src).is_empty());
    }

    #[test]
    fn a_macro_defined_twice_is_left_alone_and_one_naming_itself_keeps_the_name() {
        let src = "#ifdef A\n#define OP x++;\n#else\n#define OP y++;\n#endif\n#define SELF SELF;\n";
        let e = expansions(src);
        assert!(!e.contains_key("OP"));
        // SELF stays a name inside its own expansion, as the preprocessor leaves it
        assert_eq!(e["SELF"], "SELF;");
    }

    #[test]
    fn an_expansion_past_the_size_limit_is_left_as_written() {
        let mut src = String::from("#define L0 x = x + 1;\n");
        for i in 1..=20 {
            src.push_str(&format!("#define L{i} L{p} L{p}\n", p = i - 1));
        }
        let e = expansions(&src);
        assert!(e.contains_key("L10"));
        assert!(
            !e.contains_key("L20"),
            "2^20 statements must not be expanded"
        );
        assert!(e.values().all(|v| v.len() <= MAX_EXPANSION_BYTES));
    }

    #[test]
    fn a_name_defined_later_is_left_as_written() {
        let src = "#define TWICE ONCE ONCE\n#define ONCE x++;\n";
        let e = expansions(src);
        assert_eq!(e["ONCE"], "x++;");
        assert!(!e.contains_key("TWICE"));
    }
}

#[cfg(test)]
mod parse_tests {
    /// The shape of SHOC's MaxFlops: statement macros in a row, no semicolons, inside a loop.
    const BENCHMARK: &str = "\
#define MADD1_OP  s=v1-s*v2;
#define MADD1_MOP4  \\
     MADD1_OP MADD1_OP \\
     MADD1_OP MADD1_OP
#define BLOCK { MADD1_MOP4 }
template <class T>
__global__ void MAdd1(T *data, int nIters, T v1, T v2) {
   int gid = blockIdx.x*blockDim.x + threadIdx.x;
   register T s = data[gid];
   for (int j=0 ; j<nIters ; ++j) {
      MADD1_MOP4 MADD1_MOP4
      BLOCK; BLOCK;
   }
   data[gid] = s;
}
";

    #[test]
    fn a_kernel_made_of_statement_macros_parses_and_names_the_macros_it_uses() {
        let parsed = crate::parse::parse(BENCHMARK).expect("parses");
        assert!(
            parsed.syntax_problems.is_empty(),
            "{:?}",
            parsed.syntax_problems
        );
        let k = &parsed.kernels[0];
        assert_eq!(k.name, "MAdd1");
        for m in ["MADD1_OP", "MADD1_MOP4", "BLOCK"] {
            assert!(
                k.macros_used.iter().any(|u| u == m),
                "{m} missing from {:?}",
                k.macros_used
            );
        }
        // positions are the user's: the kernel ends on line 15
        assert_eq!(k.span.end.line, 15);
    }
}
