//! Prompt templates: one file per LLM call, loaded from a `prompts/` directory and rendered with minijinja.
//!
//! # File format (`prompts/<name>.md.j2`)
//!
//! ```text
//! +++
//! answer = "Stage1Outputs"          # the Rust type the answer must parse as (schemars schema / code block)
//! description = "Which pointer parameters does the kernel write?"
//! +++
//! The kernel `{{ kernel.name }}` ...
//! {% if error %}Your previous answer was wrong: {{ error }}{% endif %}
//! ```
//!
//! The front matter is TOML between two `+++` lines; `answer` and `description` are required, any other key
//! is kept in [`PromptTemplate::extra`] for the caller. The body is a minijinja template rendered with
//! *strict* undefined handling (a variable the caller forgot is an error, not an empty string) and with
//! `trim_blocks` / `lstrip_blocks` on, so `{% if %}` lines leave no blank lines behind. The rendered text is
//! trimmed.
//!
//! # Where templates come from ([`PromptLibrary::locate`])
//!
//! 1. an explicit directory (`--prompts DIR`), else
//! 2. `$KT_PROMPTS_DIR`, else
//! 3. the first `prompts/` directory holding at least one `*.md.j2`, walking up from the current directory, and
//! 4. always underneath: the copies compiled into the binary (every `prompts/*.md.j2` of the workspace at build
//!    time), so an installed `kt` works anywhere. A directory's template overrides the compiled-in one of the
//!    same name; names only compiled in stay available.
//!
//! Each [`RenderedPrompt`] carries blake3 hashes of the template file and of the rendered text, so a record of
//! an LLM call can say exactly which prompt produced it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::PipelineError;

/// The environment variable naming a prompts directory.
pub const PROMPTS_DIR_ENV: &str = "KT_PROMPTS_DIR";

/// File-name suffix of a template.
pub const TEMPLATE_SUFFIX: &str = ".md.j2";

include!(concat!(env!("OUT_DIR"), "/builtin_prompts.rs"));

/// The front matter of a template.
#[derive(Debug, Clone, Deserialize)]
struct FrontMatter {
    answer: String,
    description: String,
    #[serde(flatten)]
    extra: toml::Table,
}

/// One loaded template.
#[derive(Debug, Clone)]
pub struct PromptTemplate {
    /// File name without `.md.j2`, e.g. `stage1-outputs`.
    pub name: String,
    /// The Rust type name the answer must parse as (from the front matter).
    pub answer: String,
    /// What the call asks, in a sentence (from the front matter).
    pub description: String,
    /// Front-matter keys other than `answer` and `description`.
    pub extra: toml::Table,
    /// The minijinja body (the file after the closing `+++`).
    pub body: String,
    /// Where it came from: a file path, or `builtin:<name>`.
    pub origin: String,
    /// blake3 (hex) of the whole file text.
    pub template_hash: String,
    /// Lines before the body starts, to turn minijinja's line numbers into file line numbers.
    body_line_offset: usize,
}

/// A template rendered for one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderedPrompt {
    pub name: String,
    /// The Rust type name the answer must parse as.
    pub answer: String,
    /// The prompt text to send.
    pub text: String,
    /// blake3 (hex) of the template file.
    pub template_hash: String,
    /// blake3 (hex) of `text`.
    pub text_hash: String,
}

/// Where the templates of a library were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    /// Templates from this directory, over the compiled-in copies.
    Directory(PathBuf),
    /// Only the compiled-in copies.
    Builtin,
}

impl std::fmt::Display for PromptSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PromptSource::Directory(dir) => {
                write!(f, "{} (over the compiled-in templates)", dir.display())
            }
            PromptSource::Builtin => write!(f, "the templates compiled into kt"),
        }
    }
}

/// A set of prompt templates, ready to render.
pub struct PromptLibrary {
    source: PromptSource,
    templates: BTreeMap<String, PromptTemplate>,
    env: minijinja::Environment<'static>,
}

impl std::fmt::Debug for PromptLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptLibrary")
            .field("source", &self.source)
            .field("templates", &self.templates.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl PromptLibrary {
    /// Finds the templates the way the module docs describe: `explicit`, else `$KT_PROMPTS_DIR`, else a
    /// `prompts/` directory found walking up from the current directory, over the compiled-in copies.
    pub fn locate(explicit: Option<&Path>) -> Result<Self, PipelineError> {
        if let Some(dir) = explicit {
            return Self::from_dir(dir);
        }
        if let Some(dir) = std::env::var_os(PROMPTS_DIR_ENV).filter(|v| !v.is_empty()) {
            return Self::from_dir(Path::new(&dir));
        }
        if let Ok(cwd) = std::env::current_dir()
            && let Some(dir) = find_prompts_dir(&cwd)
        {
            return Self::from_dir(&dir);
        }
        Self::builtin()
    }

    /// Only the templates compiled into this build.
    pub fn builtin() -> Result<Self, PipelineError> {
        let mut templates = BTreeMap::new();
        for (name, text) in BUILTIN_PROMPTS {
            let template = parse_template(name, text, format!("builtin:{name}"))?;
            templates.insert(template.name.clone(), template);
        }
        Self::assemble(PromptSource::Builtin, templates)
    }

    /// The templates of `dir` (every `*.md.j2`), over the compiled-in copies.
    pub fn from_dir(dir: &Path) -> Result<Self, PipelineError> {
        let mut templates = BTreeMap::new();
        for (name, text) in BUILTIN_PROMPTS {
            let template = parse_template(name, text, format!("builtin:{name}"))?;
            templates.insert(template.name.clone(), template);
        }
        let entries =
            std::fs::read_dir(dir).map_err(|source| PipelineError::PromptsDirUnreadable {
                dir: dir.to_path_buf(),
                source,
            })?;
        for entry in entries {
            let entry = entry.map_err(|source| PipelineError::PromptsDirUnreadable {
                dir: dir.to_path_buf(),
                source,
            })?;
            let path = entry.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(TEMPLATE_SUFFIX))
            else {
                continue;
            };
            let text = std::fs::read_to_string(&path)
                .map_err(|source| PipelineError::io("reading prompt template", &path, source))?;
            let template = parse_template(name, &text, path.display().to_string())?;
            templates.insert(template.name.clone(), template);
        }
        Self::assemble(PromptSource::Directory(dir.to_path_buf()), templates)
    }

    /// A library of the given `(name, file text)` pairs only (no compiled-in copies): for tests and for
    /// callers that build prompts programmatically.
    pub fn from_texts<'a>(
        texts: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, PipelineError> {
        let mut templates = BTreeMap::new();
        for (name, text) in texts {
            let template = parse_template(name, text, format!("inline:{name}"))?;
            templates.insert(template.name.clone(), template);
        }
        Self::assemble(PromptSource::Builtin, templates)
    }

    fn assemble(
        source: PromptSource,
        templates: BTreeMap<String, PromptTemplate>,
    ) -> Result<Self, PipelineError> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|err| PipelineError::PromptSyntax {
                origin: "syntax config".into(),
                line: 0,
                message: err.to_string(),
            })?;
        env.set_syntax(syntax);
        for template in templates.values() {
            env.add_template_owned(template.name.clone(), template.body.clone())
                .map_err(|err| PipelineError::PromptSyntax {
                    origin: template.origin.clone(),
                    line: err.line().unwrap_or(0) + template.body_line_offset,
                    message: err.to_string(),
                })?;
        }
        Ok(Self {
            source,
            templates,
            env,
        })
    }

    /// Where the templates were found.
    pub fn source(&self) -> &PromptSource {
        &self.source
    }

    /// The names of every template, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.templates.keys().map(String::as_str)
    }

    /// The template called `name`.
    pub fn template(&self, name: &str) -> Result<&PromptTemplate, PipelineError> {
        self.templates
            .get(name)
            .ok_or_else(|| PipelineError::PromptNotFound {
                name: name.to_string(),
                searched: self.source.to_string(),
                available: self.templates.keys().cloned().collect(),
            })
    }

    /// Renders template `name` with `context` (any `Serialize` value whose fields the template uses).
    pub fn render<C: Serialize>(
        &self,
        name: &str,
        context: &C,
    ) -> Result<RenderedPrompt, PipelineError> {
        let template = self.template(name)?;
        let compiled = self
            .env
            .get_template(name)
            .map_err(|err| PipelineError::PromptRender {
                name: name.to_string(),
                origin: template.origin.clone(),
                message: err.to_string(),
            })?;
        let text = compiled
            .render(minijinja::Value::from(minijinja::value::Serde(context)))
            .map_err(|err| {
                let line = err
                    .line()
                    .map(|l| format!(" at line {}", l + template.body_line_offset))
                    .unwrap_or_default();
                PipelineError::PromptRender {
                    name: name.to_string(),
                    origin: template.origin.clone(),
                    message: format!("{err}{line}"),
                }
            })?;
        let text = text.trim().to_string();
        Ok(RenderedPrompt {
            name: name.to_string(),
            answer: template.answer.clone(),
            text_hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
            text,
            template_hash: template.template_hash.clone(),
        })
    }

    /// Like [`render`](Self::render), and also checks the template's `answer` is `expected_answer` (the Rust
    /// type the caller will parse the answer as), so a template and its caller cannot drift apart silently.
    pub fn render_as<C: Serialize>(
        &self,
        name: &str,
        expected_answer: &str,
        context: &C,
    ) -> Result<RenderedPrompt, PipelineError> {
        let template = self.template(name)?;
        if template.answer != expected_answer {
            return Err(PipelineError::PromptAnswerMismatch {
                name: name.to_string(),
                origin: template.origin.clone(),
                expected: expected_answer.to_string(),
                found: template.answer.clone(),
            });
        }
        self.render(name, context)
    }
}

/// The first `prompts/` directory holding a template, from `start` upwards.
fn find_prompts_dir(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join("prompts"))
        .find(|candidate| {
            std::fs::read_dir(candidate).ok().is_some_and(|entries| {
                entries.flatten().any(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.ends_with(TEMPLATE_SUFFIX))
                })
            })
        })
}

/// Splits a template file into front matter and body.
fn parse_template(name: &str, text: &str, origin: String) -> Result<PromptTemplate, PipelineError> {
    let bad = |message: String| PipelineError::PromptFrontMatter {
        origin: origin.clone(),
        message,
    };
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "+++" {
        return Err(bad("the first line is not `+++`".into()));
    }
    let mut front = String::new();
    let mut consumed = 1usize;
    let mut closed = false;
    for line in lines.by_ref() {
        consumed += 1;
        if line.trim_end() == "+++" {
            closed = true;
            break;
        }
        front.push_str(line);
    }
    if !closed {
        return Err(bad("no closing `+++` line".into()));
    }
    let body: String = lines.collect();
    let fm: FrontMatter = toml::from_str(&front).map_err(|err| bad(err.to_string()))?;
    if fm.answer.trim().is_empty() {
        return Err(bad("`answer` is empty".into()));
    }
    Ok(PromptTemplate {
        name: name.to_string(),
        answer: fm.answer,
        description: fm.description,
        extra: fm.extra,
        body,
        origin,
        template_hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
        body_line_offset: consumed,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ASK: &str = "+++\nanswer = \"Stage1Outputs\"\ndescription = \"Which pointers are written?\"\nmax_tokens = 200\n+++\nKernel `{{ name }}`:\n{% if error %}\nPrevious answer was wrong: {{ error }}\n{% endif %}\nAnswer now.\n";

    #[derive(Serialize)]
    struct Ctx<'a> {
        name: &'a str,
        error: Option<&'a str>,
    }

    #[test]
    fn renders_body_with_front_matter_stripped_and_hashes_text() {
        let lib = PromptLibrary::from_texts([("ask", ASK)]).unwrap();
        let r = lib
            .render(
                "ask",
                &Ctx {
                    name: "vectorAdd",
                    error: None,
                },
            )
            .unwrap();
        assert_eq!(r.text, "Kernel `vectorAdd`:\nAnswer now.");
        assert_eq!(r.answer, "Stage1Outputs");
        assert_eq!(
            r.text_hash,
            blake3::hash(r.text.as_bytes()).to_hex().to_string()
        );
        let t = lib.template("ask").unwrap();
        assert_eq!(
            t.extra.get("max_tokens").and_then(|v| v.as_integer()),
            Some(200)
        );
        let again = lib
            .render(
                "ask",
                &Ctx {
                    name: "vectorAdd",
                    error: Some("`d` is not a parameter"),
                },
            )
            .unwrap();
        assert!(
            again
                .text
                .contains("Previous answer was wrong: `d` is not a parameter")
        );
        assert_ne!(again.text_hash, r.text_hash);
        assert_eq!(again.template_hash, r.template_hash);
    }

    #[test]
    fn missing_variable_is_an_error_not_an_empty_string() {
        let lib = PromptLibrary::from_texts([("ask", ASK)]).unwrap();
        #[derive(Serialize)]
        struct Partial {
            error: Option<String>,
        }
        let err = lib.render("ask", &Partial { error: None }).unwrap_err();
        assert!(matches!(err, PipelineError::PromptRender { .. }), "{err}");
    }

    #[test]
    fn answer_type_mismatch_is_reported() {
        let lib = PromptLibrary::from_texts([("ask", ASK)]).unwrap();
        let err = lib
            .render_as(
                "ask",
                "Stage1Description",
                &Ctx {
                    name: "x",
                    error: None,
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("Stage1Description"), "{err}");
        assert!(
            lib.render_as(
                "ask",
                "Stage1Outputs",
                &Ctx {
                    name: "x",
                    error: None
                }
            )
            .is_ok()
        );
    }

    #[test]
    fn template_without_front_matter_is_rejected_with_the_format_explained() {
        let err = PromptLibrary::from_texts([("bad", "Hello {{ x }}")]).unwrap_err();
        assert!(err.to_string().contains("answer = "), "{err}");
        let err = PromptLibrary::from_texts([("bad", "+++\nanswer = \"X\"\n")]).unwrap_err();
        assert!(err.to_string().contains("closing"), "{err}");
        let err = PromptLibrary::from_texts([("bad", "+++\ndescription = \"d\"\n+++\nbody")])
            .unwrap_err();
        assert!(err.to_string().contains("answer"), "{err}");
    }

    #[test]
    fn syntax_error_reports_the_file_line() {
        let err = PromptLibrary::from_texts([(
            "bad",
            "+++\nanswer = \"X\"\ndescription = \"d\"\n+++\nok\n{% if %}\n",
        )])
        .unwrap_err();
        match err {
            PipelineError::PromptSyntax { line, .. } => assert_eq!(line, 6),
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn unknown_template_lists_the_available_ones() {
        let lib = PromptLibrary::from_texts([("ask", ASK)]).unwrap();
        let err = lib
            .render(
                "nope",
                &Ctx {
                    name: "x",
                    error: None,
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("available: ask"), "{err}");
    }

    #[test]
    fn directory_template_overrides_the_compiled_in_copy_of_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ask.md.j2"), ASK).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let lib = PromptLibrary::from_dir(dir.path()).unwrap();
        assert!(lib.template("ask").unwrap().origin.ends_with("ask.md.j2"));
        // Every compiled-in template is still there.
        for (name, _) in BUILTIN_PROMPTS {
            assert!(lib.template(name).is_ok(), "{name}");
        }
        assert_eq!(
            lib.source(),
            &PromptSource::Directory(dir.path().to_path_buf())
        );
    }

    #[test]
    fn walking_up_finds_the_nearest_prompts_dir_with_templates() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("prompts")).unwrap();
        std::fs::write(root.path().join("prompts/ask.md.j2"), ASK).unwrap();
        let deep = root.path().join("a/b");
        // An empty prompts/ on the way up is skipped.
        std::fs::create_dir_all(deep.join("prompts")).unwrap();
        assert_eq!(find_prompts_dir(&deep), Some(root.path().join("prompts")));
    }

    #[test]
    fn every_compiled_in_template_parses() {
        let lib = PromptLibrary::builtin().unwrap();
        assert_eq!(lib.names().count(), BUILTIN_PROMPTS.len());
    }
}
