//! Source rewrites the strategies and the tuner apply: prepending tunable parameters as `#define`s (Kernel
//! Tuner's convention), removing `#define`s that would clash with them, and renaming identifiers. All of
//! them work on tokens, so text in comments and string literals that happens to look the same is left alone.

use crate::error::CudaError;
use crate::lexer::{self, TokenKind};

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Prepends `#define name value` for each pair, in order, then `#line 1` so that compiler messages point at
/// the user's own line numbers. Names must be C identifiers and values must fit on one line.
pub fn prepend_defines<N, V>(source: &str, defines: &[(N, V)]) -> Result<String, CudaError>
where
    N: AsRef<str>,
    V: std::fmt::Display,
{
    let mut out = String::new();
    for (name, value) in defines {
        let name = name.as_ref();
        let value = value.to_string();
        if !is_identifier(name) {
            return Err(CudaError::Rewrite(format!(
                "`{name}` cannot be a #define name: tunable parameter names must be C identifiers"
            )));
        }
        if value.contains('\n') || value.contains('\r') || value.trim().is_empty() {
            return Err(CudaError::Rewrite(format!(
                "the value of `{name}` must be non-empty and on one line, got {value:?}"
            )));
        }
        out.push_str(&format!("#define {name} {value}\n"));
    }
    if out.is_empty() {
        return Ok(source.to_string());
    }
    out.push_str("#line 1\n");
    out.push_str(source);
    Ok(out)
}

/// Removes the `#define` directives of the given names (continuation lines included), leaving an empty line
/// in place of each removed line so that line numbers below stay the same. The same text in comments, strings
/// or ordinary code is not touched. Returns the new source and how many directives were removed.
pub fn remove_defines(source: &str, names: &[&str]) -> (String, usize) {
    let tokens = lexer::tokenize(source);
    let mut out = String::with_capacity(source.len());
    let mut copied = 0;
    let mut removed = 0;
    for define in lexer::defines(source, &tokens) {
        if names.contains(&define.name.as_str()) {
            out.push_str(&source[copied..define.directive_start]);
            // keep the newlines of continuation lines
            out.extend(
                source[define.directive_start..define.directive_end]
                    .chars()
                    .filter(|&c| c == '\n'),
            );
            copied = define.directive_end;
            removed += 1;
        }
    }
    out.push_str(&source[copied..]);
    (out, removed)
}

/// Renames identifiers everywhere they occur as code (including inside preprocessor directives, so a
/// `#define` and all its uses move together), never inside comments or string literals. Fails when a new name
/// is not an identifier or is already used in the source (the rename would merge two names).
pub fn rename_identifiers(source: &str, renames: &[(&str, &str)]) -> Result<String, CudaError> {
    let tokens = lexer::tokenize(source);
    for (from, to) in renames {
        if !is_identifier(to) {
            return Err(CudaError::Rewrite(format!(
                "cannot rename `{from}` to `{to}`: not a C identifier"
            )));
        }
        if from != to
            && tokens
                .iter()
                .any(|t| t.kind == TokenKind::Ident && t.text(source) == *to)
        {
            return Err(CudaError::Rewrite(format!(
                "cannot rename `{from}` to `{to}`: `{to}` is already used in the source; pick another name"
            )));
        }
    }
    let mut out = String::with_capacity(source.len());
    let mut copied = 0;
    for t in tokens.iter().filter(|t| t.kind == TokenKind::Ident) {
        if let Some((_, to)) = renames.iter().find(|(from, _)| *from == t.text(source)) {
            out.push_str(&source[copied..t.start]);
            out.push_str(to);
            copied = t.end;
        }
    }
    out.push_str(&source[copied..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_are_prepended_in_order_with_a_line_directive() {
        let out = prepend_defines(
            "__global__ void k() {}\n",
            &[("block_size_x", 128), ("tile", 4)],
        )
        .unwrap();
        assert_eq!(
            out,
            "#define block_size_x 128\n#define tile 4\n#line 1\n__global__ void k() {}\n"
        );
    }

    #[test]
    fn no_defines_leave_the_source_unchanged() {
        let none: &[(&str, i32)] = &[];
        assert_eq!(prepend_defines("x", none).unwrap(), "x");
    }

    #[test]
    fn bad_define_names_and_values_are_rejected() {
        assert!(prepend_defines("", &[("block size", 1)]).is_err());
        assert!(prepend_defines("", &[("1abc", 1)]).is_err());
        assert!(prepend_defines("", &[("a", "1\n#include <x>")]).is_err());
    }

    #[test]
    fn removing_a_define_keeps_comments_strings_and_line_numbers() {
        let src = "// #define BLOCK 256 is the default\n#define BLOCK \\\n  256\nconst char *s = \"#define BLOCK 1\";\nint x = BLOCK;\n";
        let (out, n) = remove_defines(src, &["BLOCK"]);
        assert_eq!(n, 1);
        assert_eq!(
            out,
            "// #define BLOCK 256 is the default\n\n\nconst char *s = \"#define BLOCK 1\";\nint x = BLOCK;\n"
        );
        assert_eq!(out.lines().count(), src.lines().count());
    }

    #[test]
    fn other_defines_stay() {
        let (out, n) = remove_defines("#define A 1\n#define AB 2\n", &["A"]);
        assert_eq!((out.as_str(), n), ("\n#define AB 2\n", 1));
    }

    #[test]
    fn rename_moves_a_define_and_its_uses_but_not_comments() {
        let src = "#define BLOCK_SIZE_X 256 // BLOCK_SIZE_X\nint i = blockIdx.x * BLOCK_SIZE_X; /* BLOCK_SIZE_X */\n";
        let out = rename_identifiers(src, &[("BLOCK_SIZE_X", "user_block")]).unwrap();
        assert_eq!(
            out,
            "#define user_block 256 // BLOCK_SIZE_X\nint i = blockIdx.x * user_block; /* BLOCK_SIZE_X */\n"
        );
    }

    #[test]
    fn rename_onto_an_existing_name_is_refused() {
        let err = rename_identifiers("int a; int b;", &[("a", "b")]).unwrap_err();
        assert!(err.to_string().contains("already used"), "{err}");
    }
}
