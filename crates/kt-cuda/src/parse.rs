//! Whole-file analysis: parse once with tree-sitter-cuda (user headers inlined, see includes.rs), find every
//! `__global__` definition and the file-scope things kernels refer to (`__device__` helpers, `#define`s,
//! constants), and report syntax errors with the user's file and line numbers. A syntax error costs only the
//! kernel it sits in (or a helper of it): the file's other kernels stay usable.

use std::path::Path;

use crate::constant_memory;
use crate::diagnostics::{not_cuda_reason, syntax_problems};
use crate::error::{CudaError, SyntaxProblem};
use crate::includes::SourceFile;
use crate::kernel::Kernel;
use crate::kernel_facts;
use crate::layout;
use crate::location::{Location, Span};
use crate::scope::{FileScope, span_of};
use crate::source::{CudaSource, DeviceFunction, MacroDefinition};

/// Analyses a whole CUDA source. Fails on text that is not CUDA, on a file without any usable `__global__`
/// definition, and on syntax errors when they leave no kernel usable.
pub fn parse(source: &str) -> Result<CudaSource, CudaError> {
    parse_named(source, "the source")
}

/// [`parse`], with `what` (usually the file name) in error messages.
pub fn parse_named(source: &str, what: &str) -> Result<CudaSource, CudaError> {
    parse_source(&SourceFile::from_text(what, source, &[]), false)
}

/// Reads and analyses a file, following its user headers (its own directory); errors name the file.
pub fn parse_file(path: &Path) -> Result<CudaSource, CudaError> {
    parse_source_file(&SourceFile::load(path, &[])?)
}

/// [`parse`] of a file with its followed headers: kernels, helpers and macros from headers are found, and
/// every position and `origin_file` names the file it is in.
pub fn parse_source_file(file: &SourceFile) -> Result<CudaSource, CudaError> {
    parse_source(file, true)
}

/// Like [`parse`] but keeps going through syntax errors (all recorded in `syntax_problems`, no kernel left
/// out) and returns an empty kernel list rather than an error; text that is not CUDA at all is still an error.
pub fn parse_tolerant(source: &str) -> Result<CudaSource, CudaError> {
    analyse(&SourceFile::from_text("the source", source, &[]), false)
}

fn parse_source(file: &SourceFile, with_origin: bool) -> Result<CudaSource, CudaError> {
    let mut parsed = analyse(file, with_origin)?;
    // a problem inside a kernel or one of its helpers costs that kernel; others are kept as warnings
    let mut broken = Vec::new();
    let mut kept = Vec::new();
    for k in std::mem::take(&mut parsed.kernels) {
        let spans: Vec<(Option<&String>, Span)> = std::iter::once((k.origin_file.as_ref(), k.span))
            .chain(
                parsed
                    .device_functions
                    .iter()
                    .filter(|d| k.helpers.contains(&d.name))
                    .map(|d| (d.origin_file.as_ref(), d.span)),
            )
            .collect();
        let own: Vec<SyntaxProblem> = parsed
            .syntax_problems
            .iter()
            .filter(|p| {
                spans.iter().any(|(file, s)| {
                    p.origin_file.as_ref() == *file && s.start <= p.location && p.location < s.end
                })
            })
            .cloned()
            .collect();
        if own.is_empty() {
            kept.push(k);
        } else {
            tracing::warn!(kernel = %k.name, problems = own.len(), "kernel left out: syntax errors");
            broken.push((k.name.clone(), own));
        }
    }
    parsed.kernels = kept;
    parsed.broken_kernels = broken;
    let what = file.name.clone();
    if parsed.kernels.is_empty() && !parsed.syntax_problems.is_empty() {
        return Err(CudaError::Syntax {
            what,
            problems: parsed.syntax_problems,
        });
    }
    if parsed.kernels.is_empty() {
        return Err(CudaError::NoKernel {
            what,
            includes: parsed.includes_note,
        });
    }
    for p in &parsed.syntax_problems {
        tracing::warn!(problem = %p, "syntax error outside every kernel; the kernels are still used");
    }
    Ok(parsed)
}

fn analyse(file: &SourceFile, with_origin: bool) -> Result<CudaSource, CudaError> {
    let what = file.name.as_str();
    let source = file.combined.as_str();
    if source.contains('\0') {
        return Err(CudaError::NotCuda {
            what: what.to_string(),
            reason: "it contains NUL bytes (a binary file?)".into(),
        });
    }
    let (prepared, tree) = crate::grammar_parse::prepared_tree(source)?;
    let scope = FileScope::collect(&prepared, tree.root_node());
    let problems = syntax_problems(&prepared, tree.root_node());
    let mut kernels: Vec<Kernel> = scope
        .kernels
        .iter()
        .map(|found| kernel_facts::analyse(&prepared, &scope, found))
        .collect();
    let constant_symbols = constant_memory::collect(&prepared, &scope, tree.root_node());
    for (k, found) in kernels.iter_mut().zip(&scope.kernels) {
        layout::resolve_params(&prepared, &scope, k);
        k.constant_memory = constant_memory::read_by(
            &prepared,
            &scope,
            found.definition,
            &k.helpers,
            &constant_symbols,
        );
    }
    if kernels.is_empty()
        && let Some(reason) = not_cuda_reason(&prepared, tree.root_node(), &problems)
    {
        return Err(CudaError::NotCuda {
            what: what.to_string(),
            reason,
        });
    }
    tracing::debug!(
        kernels = kernels.len(),
        problems = problems.len(),
        "parsed CUDA source"
    );
    let mut parsed = CudaSource {
        kernels,
        device_functions: scope
            .device_functions
            .iter()
            .map(|(name, node)| DeviceFunction {
                name: name.clone(),
                span: span_of(&prepared, *node),
                origin_file: None,
            })
            .collect(),
        defines: prepared
            .defines
            .iter()
            .map(|d| MacroDefinition {
                name: d.name.clone(),
                function_like: d.function_like,
                body: d.body.clone(),
                location: prepared.location_of_original(d.directive_start),
                origin_file: None,
            })
            .collect(),
        constants: scope.constants.iter().cloned().collect(),
        constant_symbols,
        syntax_problems: problems,
        broken_kernels: Vec::new(),
        includes_note: file.includes_note(),
        macro_kernels: crate::macro_kernels::find(&prepared.original, &prepared.defines, |at| {
            prepared.location_of_original(at)
        }),
    };
    relocate(&mut parsed, file, with_origin);
    Ok(parsed)
}

/// Positions of the combined text back to the file each came from.
fn relocate(parsed: &mut CudaSource, file: &SourceFile, with_origin: bool) {
    let at = |l: &mut Location| -> String {
        let (name, moved) = file.relocate(*l);
        *l = moved;
        name.to_string()
    };
    let origin = |name: String| with_origin.then_some(name);
    for k in &mut parsed.kernels {
        let name = at(&mut k.name_location);
        at(&mut k.span.start);
        at(&mut k.span.end);
        for a in &mut k.launch_assumptions {
            at(&mut a.location);
        }
        for r in &mut k.restrictions {
            at(&mut r.location);
        }
        for d in &mut k.grid_divisors {
            at(&mut d.location);
        }
        for l in &mut k.host_launches {
            let launch_file = at(&mut l.location);
            l.file = (launch_file != name).then_some(launch_file);
        }
        for c in &mut k.constant_memory {
            at(&mut c.location);
        }
        k.origin_file = origin(name);
    }
    for c in &mut parsed.constant_symbols {
        at(&mut c.location);
    }
    for d in &mut parsed.device_functions {
        let name = at(&mut d.span.start);
        at(&mut d.span.end);
        d.origin_file = origin(name);
    }
    for d in &mut parsed.defines {
        d.origin_file = origin(at(&mut d.location));
    }
    for m in &mut parsed.macro_kernels {
        at(&mut m.location);
    }
    let many_files = file.files.len() > 1;
    for p in &mut parsed.syntax_problems {
        let name = at(&mut p.location);
        if many_files || with_origin {
            p.origin_file = Some(name);
        }
    }
}

#[cfg(test)]
mod tests;
