//! Finding names in a kernel source that collide with tunable parameter names. A tunable parameter reaches
//! the kernel as `#define name value`, so any identifier spelled the same is replaced by the preprocessor
//! (an exact clash), and a near-identical spelling (`BLOCK_SIZE_X`, `blockSizeX` for `block_size_x`) is
//! almost always the user's own version of the same knob, which the strategy must unify or rename.

use serde::{Deserialize, Serialize};

use crate::lexer::{self, TokenKind};
use crate::location::Location;
use crate::preprocess::Prepared;

/// How an identifier collides with a tunable parameter name.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConflictKind {
    /// Spelled exactly like the parameter: the prepended `#define` will replace it.
    Exact,
    /// Equal after lower-casing and dropping underscores: probably the same knob under another spelling.
    SimilarSpelling,
}

/// One occurrence of a colliding identifier.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NameConflict {
    /// The tunable parameter name it collides with.
    pub parameter: String,
    /// The identifier as written in the source.
    pub identifier: String,
    pub kind: ConflictKind,
    /// True when this occurrence is the name of a `#define` (the definition itself, which
    /// [`crate::remove_defines`] can drop), false for any other use.
    pub is_define: bool,
    pub location: Location,
}

impl std::fmt::Display for NameConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.is_define {
            "#define"
        } else {
            "identifier"
        };
        match self.kind {
            ConflictKind::Exact => write!(
                f,
                "line {}, column {}: {what} `{}` has the name of tunable parameter `{}`",
                self.location.line, self.location.column, self.identifier, self.parameter
            ),
            ConflictKind::SimilarSpelling => write!(
                f,
                "line {}, column {}: {what} `{}` differs from tunable parameter `{}` only in case or underscores",
                self.location.line, self.location.column, self.identifier, self.parameter
            ),
        }
    }
}

/// Lower case without underscores: `block_size_x`, `BLOCK_SIZE_X` and `blockSizeX` all become `blocksizex`.
pub fn normalize_name(name: &str) -> String {
    name.chars()
        .filter(|&c| c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Every code identifier (not in comments or strings; `#define` names and bodies included) that equals a
/// parameter name or matches it after [`normalize_name`], in source order.
pub fn find_name_conflicts<S: AsRef<str>>(source: &str, parameters: &[S]) -> Vec<NameConflict> {
    let prepared = Prepared::new(source);
    let tokens = lexer::tokenize(source);
    let normalized: Vec<(String, &str)> = parameters
        .iter()
        .map(|p| (normalize_name(p.as_ref()), p.as_ref()))
        .collect();
    let mut out = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        if token.kind != TokenKind::Ident {
            continue;
        }
        let text = token.text(source);
        let key = normalize_name(text);
        // an exact match wins over a similar spelling of another parameter
        let hit = normalized
            .iter()
            .find(|(_, p)| *p == text)
            .map(|(_, p)| (*p, ConflictKind::Exact))
            .or_else(|| {
                normalized
                    .iter()
                    .find(|(n, _)| *n == key)
                    .map(|(_, p)| (*p, ConflictKind::SimilarSpelling))
            });
        let Some((parameter, kind)) = hit else {
            continue;
        };
        let is_define = token.directive.is_some_and(|d| {
            index == d + 2
                && tokens
                    .get(d + 1)
                    .is_some_and(|k| k.text(source) == "define")
        });
        out.push(NameConflict {
            parameter: parameter.to_string(),
            identifier: text.to_string(),
            kind,
            is_define,
            location: prepared.location_of_original(token.start),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_that_differ_in_case_or_underscores_normalize_equal() {
        assert_eq!(
            normalize_name("block_size_x"),
            normalize_name("BLOCK_SIZE_X")
        );
        assert_eq!(normalize_name("blockSizeX"), normalize_name("BLOCK_SIZE_X"));
        assert_ne!(normalize_name("block_size_y"), normalize_name("blockSizeX"));
    }

    #[test]
    fn exact_and_similar_names_are_found_with_locations_but_not_in_comments() {
        let src = "#define BLOCK_SIZE_X 256\n// block_size_x in a comment\n__global__ void k(int block_size_x) {\n  int i = blockSizeX;\n  const char *s = \"block_size_x\";\n}\n";
        let found = find_name_conflicts(src, &["block_size_x"]);
        let summary: Vec<(&str, ConflictKind, bool, usize, usize)> = found
            .iter()
            .map(|c| {
                (
                    c.identifier.as_str(),
                    c.kind,
                    c.is_define,
                    c.location.line,
                    c.location.column,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("BLOCK_SIZE_X", ConflictKind::SimilarSpelling, true, 1, 9),
                ("block_size_x", ConflictKind::Exact, false, 3, 23),
                ("blockSizeX", ConflictKind::SimilarSpelling, false, 4, 11),
            ]
        );
        assert!(found[1].to_string().contains("line 3, column 23"));
    }

    #[test]
    fn a_source_without_collisions_has_no_conflicts() {
        let found = find_name_conflicts(
            "__global__ void k(float *a, int n) {}",
            &["block_size_x", "tile_size_y"],
        );
        assert!(found.is_empty());
    }
}
