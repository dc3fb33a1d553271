//! A CUDA file together with the user headers it includes. `#include "x.h"` (and `<x.h>` when `x.h` is in one
//! of the given include directories) is followed — the including file's directory first, then the include
//! directories in order — and the header's text takes the place of the directive, once per header, so that
//! kernels, helpers, typedefs and macros defined in headers are seen like the file's own. System headers
//! (`<cuda_fp16.h>`, `<stdio.h>`) that no include directory holds are not followed; their directives stay.
//! A line map takes every position in the combined text back to the file and line it came from.

use std::path::{Path, PathBuf};

use crate::error::CudaError;
use crate::lexer::{self, TokenKind};
use crate::location::Location;

/// Deeper nesting than this is taken as an include cycle the guards did not stop.
const MAX_DEPTH: usize = 32;

/// One run of consecutive combined lines that come from one file.
#[derive(Debug, Clone, PartialEq)]
struct LineRun {
    /// First 1-based line of the run in the combined text.
    combined_line: usize,
    /// Index into [`SourceFile::files`].
    file: usize,
    /// The same line's 1-based number in its own file.
    file_line: usize,
}

/// How an `#include` directive was handled.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IncludeRecord {
    /// The header as written between the quotes or brackets.
    pub header: String,
    /// `true` for `<…>`.
    pub system: bool,
    /// Where it was found and inlined; `None` when it was not found (or is a system header kt leaves alone).
    pub resolved: Option<PathBuf>,
    /// The file (as named in messages) and line of the directive.
    pub from_file: String,
    pub line: usize,
    /// The macro an enclosing `#ifdef NAME` / `#if defined(NAME)` / `#if NAME` needs for the directive to
    /// count (PolyBench's `#ifdef POLYBENCH_PAPI` … `#include "papi_counters.list"`): a header in a branch no
    /// file defines the macro for is one nvcc never opens either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_macro: Option<String>,
}

/// A CUDA file as kt reads it: its own text, and the combined text with its user headers inlined.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceFile {
    /// The main file's name for messages (the path as the user gave it).
    pub name: String,
    /// The main file's text, exactly as written.
    pub text: String,
    /// The text kt analyses: `text` with every followed header inlined in place of its `#include`.
    pub combined: String,
    /// File names: the main file first, then every followed header in first-inclusion order.
    pub files: Vec<String>,
    /// Every `#include` directive seen, in order.
    pub includes: Vec<IncludeRecord>,
    runs: Vec<LineRun>,
}

impl SourceFile {
    /// A source with no file behind it: includes are not followed (there is no directory to look in) unless
    /// `include_dirs` are given.
    pub fn from_text(name: &str, text: &str, include_dirs: &[PathBuf]) -> Self {
        let mut builder = Builder::new(include_dirs);
        builder.add(name, text, None, 0);
        builder.finish(name, text)
    }

    /// Reads `path` and follows its includes (its own directory, then `include_dirs`).
    pub fn load(path: &Path, include_dirs: &[PathBuf]) -> Result<Self, CudaError> {
        let name = path.display().to_string();
        let text = read_text(path, &name)?;
        let mut builder = Builder::new(include_dirs);
        builder.add(&name, &text, Some(path), 0);
        Ok(builder.finish(&name, &text))
    }

    /// The file and line of a 1-based line of the combined text.
    pub fn origin_of_line(&self, combined_line: usize) -> (&str, usize) {
        let idx = self
            .runs
            .partition_point(|r| r.combined_line <= combined_line)
            .saturating_sub(1);
        match self.runs.get(idx) {
            Some(run) => (
                self.files[run.file].as_str(),
                run.file_line + (combined_line - run.combined_line),
            ),
            None => (self.name.as_str(), combined_line),
        }
    }

    /// A location of the combined text in its own file: (file name, location there).
    pub fn relocate(&self, location: Location) -> (&str, Location) {
        let (file, line) = self.origin_of_line(location.line);
        (
            file,
            Location {
                line,
                column: location.column,
            },
        )
    }

    /// Headers that were followed, in order.
    pub fn followed(&self) -> Vec<&IncludeRecord> {
        self.includes
            .iter()
            .filter(|i| i.resolved.is_some())
            .collect()
    }

    /// A sentence for "no kernel found" messages: which includes were followed, which were not found.
    pub fn includes_note(&self) -> String {
        let list = |want: &dyn Fn(&IncludeRecord) -> bool| {
            self.includes
                .iter()
                .filter(|i| want(i))
                .map(|i| {
                    if i.system {
                        format!("<{}>", i.header)
                    } else {
                        format!("\"{}\"", i.header)
                    }
                })
                .collect::<Vec<_>>()
        };
        let followed = list(&|i| i.resolved.is_some());
        let missing = list(&|i| i.resolved.is_none() && !i.system);
        let system = list(&|i| i.resolved.is_none() && i.system);
        let mut parts = Vec::new();
        if !followed.is_empty() {
            parts.push(format!("followed includes: {}", followed.join(", ")));
        }
        if !missing.is_empty() {
            parts.push(format!(
                "includes not found: {} (add their directory with --include DIR)",
                missing.join(", ")
            ));
        }
        if !system.is_empty() {
            parts.push(format!(
                "system headers not followed: {}",
                system.join(", ")
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join("; "))
        }
    }
}

/// Text from raw bytes, or [`CudaError::NotCuda`] for binary data.
pub fn decode(bytes: &[u8], what: &str) -> Result<String, CudaError> {
    if bytes.contains(&0) {
        return Err(CudaError::NotCuda {
            what: what.to_string(),
            reason: "it contains NUL bytes (a binary file?)".into(),
        });
    }
    String::from_utf8(bytes.to_vec()).map_err(|e| CudaError::NotCuda {
        what: what.to_string(),
        reason: format!(
            "it is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

fn read_text(path: &Path, name: &str) -> Result<String, CudaError> {
    let bytes = std::fs::read(path).map_err(|source| CudaError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    decode(&bytes, name)
}

/// One `#include` directive in a text: the byte range of its whole line (newline included), the header and
/// its form.
struct Directive {
    start: usize,
    end: usize,
    header: String,
    system: bool,
    requires_macro: Option<String>,
}

/// The macro a conditional directive's true branch needs, when the condition is just that one macro being
/// defined (`#ifdef X`, `#if defined(X)`, `#if defined X`, `#if X`); anything else is None.
fn condition_macro(words: &[&str]) -> Option<String> {
    let ident = |w: &str| {
        w.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match words {
        ["ifdef", name] if ident(name) => Some(name.to_string()),
        ["if", "defined", "(", name, ")"] | ["if", "defined", name] | ["if", name]
            if ident(name) && *name != "defined" =>
        {
            Some(name.to_string())
        }
        _ => None,
    }
}

fn include_directives(text: &str) -> Vec<Directive> {
    let tokens = lexer::tokenize(text);
    let mut out = Vec::new();
    // per open conditional: the macro its current branch needs (None: unknown or not one macro)
    let mut conditions: Vec<Option<String>> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let is_hash = t.kind == TokenKind::Punct && t.directive == Some(i);
        if is_hash {
            let words: Vec<&str> = tokens[i + 1..]
                .iter()
                .take_while(|x| x.directive == Some(i) && x.kind != TokenKind::Comment)
                .map(|x| x.text(text))
                .collect();
            match words.first().copied() {
                Some("if" | "ifdef" | "ifndef") => conditions.push(condition_macro(&words)),
                Some("else" | "elif" | "elifdef" | "elifndef") => {
                    if let Some(top) = conditions.last_mut() {
                        *top = None;
                    }
                }
                Some("endif") => {
                    conditions.pop();
                }
                _ => {}
            }
        }
        let is_include = tokens
            .get(i + 1)
            .is_some_and(|n| n.directive == Some(i) && n.text(text) == "include");
        if !(is_hash && is_include) {
            continue;
        }
        let line_end = text[t.start..]
            .find('\n')
            .map_or(text.len(), |n| t.start + n + 1);
        let rest = text[tokens[i + 1].end..line_end].trim();
        let (header, system) = if let Some(r) = rest.strip_prefix('"') {
            (r.split('"').next().unwrap_or_default(), false)
        } else if let Some(r) = rest.strip_prefix('<') {
            (r.split('>').next().unwrap_or_default(), true)
        } else {
            continue; // `#include MACRO`: not followed
        };
        let line_start = text[..t.start].rfind('\n').map_or(0, |n| n + 1);
        out.push(Directive {
            start: line_start,
            end: line_end,
            header: header.trim().to_string(),
            system,
            requires_macro: conditions.iter().flatten().next().cloned(),
        });
    }
    out
}

struct Builder<'a> {
    include_dirs: &'a [PathBuf],
    combined: String,
    files: Vec<String>,
    seen: Vec<PathBuf>,
    includes: Vec<IncludeRecord>,
    runs: Vec<LineRun>,
}

impl<'a> Builder<'a> {
    fn new(include_dirs: &'a [PathBuf]) -> Self {
        Builder {
            include_dirs,
            combined: String::new(),
            files: Vec::new(),
            seen: Vec::new(),
            includes: Vec::new(),
            runs: Vec::new(),
        }
    }

    fn combined_line(&self) -> usize {
        self.combined.matches('\n').count() + 1
    }

    /// Appends `text` (from the file `name` at `path`) with its includes inlined.
    fn add(&mut self, name: &str, text: &str, path: Option<&Path>, depth: usize) {
        let file = self.files.len();
        self.files.push(name.to_string());
        if let Some(p) = path {
            self.seen.push(canonical(p));
        }
        let mut copied = 0;
        for d in include_directives(text) {
            let line = text[..d.start].matches('\n').count() + 1;
            let resolved = self.resolve(&d, path);
            let followed = match &resolved {
                Some(p) if !self.seen.contains(&canonical(p)) && depth < MAX_DEPTH => {
                    read_text(p, &p.display().to_string()).ok()
                }
                _ => None,
            };
            self.includes.push(IncludeRecord {
                header: d.header.clone(),
                system: d.system,
                resolved: resolved.clone(),
                from_file: name.to_string(),
                line,
                requires_macro: d.requires_macro.clone(),
            });
            let (Some(header_path), Some(header_text)) = (resolved, followed) else {
                continue;
            };
            // the text before the directive, then the header in its place
            self.push(&text[copied..d.start], file, copied, text);
            let header_name = header_path.display().to_string();
            self.add(&header_name, &header_text, Some(&header_path), depth + 1);
            if !self.combined.ends_with('\n') {
                self.combined.push('\n');
            }
            copied = d.end;
        }
        self.push(&text[copied..], file, copied, text);
    }

    /// Appends a piece of a file's text that starts at byte `offset` of it.
    fn push(&mut self, piece: &str, file: usize, offset: usize, whole: &str) {
        if piece.is_empty() {
            return;
        }
        self.runs.push(LineRun {
            combined_line: self.combined_line(),
            file,
            file_line: whole[..offset].matches('\n').count() + 1,
        });
        self.combined.push_str(piece);
    }

    fn resolve(&self, d: &Directive, from: Option<&Path>) -> Option<PathBuf> {
        let own_dir = (!d.system)
            .then(|| from.and_then(Path::parent))
            .flatten()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                }
            });
        own_dir
            .into_iter()
            .chain(self.include_dirs.iter().cloned())
            .map(|dir| dir.join(&d.header))
            .find(|candidate| candidate.is_file())
    }

    fn finish(self, name: &str, text: &str) -> SourceFile {
        SourceFile {
            name: name.to_string(),
            text: text.to_string(),
            combined: self.combined,
            files: self.files,
            includes: self.includes,
            runs: self.runs,
        }
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_user_header_is_inlined_once_and_lines_map_back_to_it() {
        let dir = tempfile_dir("inline");
        write(&dir, "common.h", "#pragma once\ntypedef float real;\n");
        let main = write(
            &dir,
            "k.cu",
            "#include \"common.h\"\n#include \"common.h\"\n#include <stdio.h>\n__global__ void k(real *a) {}\n",
        );
        let file = SourceFile::load(&main, &[]).unwrap();
        assert_eq!(file.files.len(), 2);
        assert!(
            file.combined
                .starts_with("#pragma once\ntypedef float real;\n")
        );
        assert_eq!(file.combined.matches("typedef").count(), 1);
        let kernel_line = file
            .combined
            .lines()
            .position(|l| l.contains("__global__"))
            .unwrap()
            + 1;
        assert_eq!(
            file.origin_of_line(kernel_line),
            (main.display().to_string().as_str(), 4)
        );
        assert!(file.origin_of_line(2).0.ends_with("common.h"));
        assert_eq!(file.origin_of_line(2).1, 2);
        let note = file.includes_note();
        assert!(note.contains("followed includes: \"common.h\""), "{note}");
        assert!(
            note.contains("system headers not followed: <stdio.h>"),
            "{note}"
        );
    }

    #[test]
    fn a_missing_header_is_named_with_what_to_do() {
        let dir = tempfile_dir("missing");
        let main = write(&dir, "k.cu", "#include \"gone.h\"\nint x;\n");
        let file = SourceFile::load(&main, &[]).unwrap();
        assert_eq!(file.combined, "#include \"gone.h\"\nint x;\n");
        let note = file.includes_note();
        assert!(
            note.contains(
                "includes not found: \"gone.h\" (add their directory with --include DIR)"
            ),
            "{note}"
        );
    }

    #[test]
    fn an_include_in_a_branch_for_one_macro_names_that_macro() {
        let src = "#ifndef GUARD_H\n#define GUARD_H\n#include \"always.h\"\n#ifdef PAPI\n#  include \"papi.list\"\n#else\n#include \"other.h\"\n#endif\n#if defined(MPI)\n#include \"mpi_x.h\"\n#endif\n#if N > 2\n#include \"n.h\"\n#endif\n#endif\n";
        let file = SourceFile::from_text("k.cu", src, &[]);
        let needs: Vec<(&str, Option<&str>)> = file
            .includes
            .iter()
            .map(|i| (i.header.as_str(), i.requires_macro.as_deref()))
            .collect();
        assert_eq!(
            needs,
            vec![
                ("always.h", None),
                ("papi.list", Some("PAPI")),
                ("other.h", None),
                ("mpi_x.h", Some("MPI")),
                ("n.h", None),
            ]
        );
    }

    #[test]
    fn include_dirs_are_searched_for_quoted_and_bracketed_headers() {
        let dir = tempfile_dir("dirs");
        let inc = dir.join("inc");
        std::fs::create_dir_all(&inc).unwrap();
        write(&inc, "a.h", "#define A 1\n");
        write(&inc, "b.h", "#define B 2\n");
        let file =
            SourceFile::from_text("t.cu", "#include \"a.h\"\n#include <b.h>\nint y;\n", &[inc]);
        assert_eq!(file.combined, "#define A 1\n#define B 2\nint y;\n");
        assert_eq!(file.origin_of_line(3), ("t.cu", 3));
    }

    /// A fresh directory under the system temp dir for one test.
    fn tempfile_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kt-cuda-includes-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
