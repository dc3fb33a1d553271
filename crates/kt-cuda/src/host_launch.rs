//! Launch facts from a file's own host code: for `kernel<<<grid, block, shmem>>>(args…)` the grid, block and
//! dynamic shared memory the program launches with, with the host variables they name (`dim3 block(BS, BS)`,
//! `int grid_size = ceil_div(N, block_size)` a few lines above) followed to their definitions and the
//! launch's own arguments named as the kernel's parameters. From them: the default block, and per grid
//! dimension the problem size and what divides it (Kernel Tuner's `grid_div_*`), and the shared memory rule.
//! What cannot be read is left out, never guessed.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::host_expr::{eval_int, identifiers, macro_lookup, normalized, split_top, substitute};
use crate::host_syntax::{
    brace_depth, ceil_parts, function_start, inline_dim3, matching, sizes_of,
};
use crate::location::Location;

/// One launch of the kernel in host code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostLaunch {
    /// Where the launch is (the kernel name's position; line and column in its file).
    pub location: Location,
    /// The file the launch is in, when that is not the kernel's file argument (a followed header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Byte offset of the launch in the text searched.
    #[serde(skip)]
    pub(crate) offset: usize,
    /// The launch as written (whitespace collapsed), `k<<<grid, block>>>`.
    pub text: String,
    /// Grid per dimension, x first, with host variables followed and arguments named as parameters.
    pub grid: [String; 3],
    /// Block per dimension, likewise.
    pub block: [String; 3],
    /// The block's thread counts, when they are constants (literals, macros, `sizeof`).
    pub block_values: Option<[u64; 3]>,
    /// Per grid dimension: the problem size and its divisors, where they could be read.
    pub grid_facts: [Option<GridFact>; 3],
    /// Dynamic shared memory per block in tuner names (`block_size_x * 4`), when given and readable.
    pub shared_mem: Option<String>,
    /// The shared-memory argument as written, when the launch has one that is not 0.
    pub shared_mem_written: Option<String>,
    /// Valid sizes the host function asserts before the launch (`assert(N % 4 == 0)`), per parameter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_asserts: Vec<SizeAssert>,
}

/// A size rule read from an `assert` of the function that launches the kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeAssert {
    /// The kernel's parameter the asserted value is passed as.
    pub param: String,
    pub rule: crate::size_rules::SizeRule,
    /// The assert's condition as written.
    pub text: String,
}

/// A grid dimension as Kernel Tuner describes it: ceil(problem / product of divisors).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridFact {
    /// Over the kernel's parameters and numbers.
    pub problem: String,
    /// `block_size_x`, numbers; empty: one block per element of `problem`.
    pub divisors: Vec<String>,
}

/// Every launch of `kernel` in `source` (comments and strings ignored), in source order. `params` are the
/// kernel's parameter names in order; `macros` the file's object-like macros (name → body).
pub fn host_launches(
    source: &str,
    kernel: &str,
    params: &[String],
    macros: &HashMap<String, String>,
) -> Vec<HostLaunch> {
    let code = crate::instantiations::code_only(source);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(kernel) {
        let at = from + found;
        from = at + kernel.len();
        let bytes = code.as_bytes();
        let word = |i: usize| {
            bytes
                .get(i)
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
        };
        if at > 0 && word(at - 1) || word(from) {
            continue;
        }
        if let Some(site) = launch_site(&code, from) {
            let reader = Reader {
                code: &code,
                at,
                body: function_start(&code[..at]),
                arguments: site.arguments.iter().map(|a| normalized(a)).collect(),
                params,
                macros,
            };
            out.push(reader.launch(&site, &code[at..site.end]));
        }
    }
    out
}

/// The parts of `<<<…>>>(…)` after a kernel's name.
struct Site {
    config: Vec<String>,
    arguments: Vec<String>,
    end: usize,
}

/// `[<template args>] <<<config>>> (arguments)` starting at `from`.
fn launch_site(code: &str, from: usize) -> Option<Site> {
    let mut i = from + code[from..].len() - code[from..].trim_start().len();
    if code[i..].starts_with('<') && !code[i..].starts_with("<<<") {
        let mut depth = 0;
        for (j, c) in code[i..].char_indices() {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                ';' | '{' | '}' => return None,
                _ => {}
            }
            if depth == 0 {
                i += j + 1;
                break;
            }
        }
        i += code[i..].len() - code[i..].trim_start().len();
    }
    let rest = code[i..].strip_prefix("<<<")?;
    let close = rest.find(">>>")?;
    let config = split_top(&rest[..close], ',');
    let after = &rest[close + 3..];
    let open = after.len() - after.trim_start().len();
    let args_text = after[open..].strip_prefix('(')?;
    let mut depth = 1;
    let end = args_text.char_indices().find_map(|(j, c)| {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        (depth == 0).then_some(j)
    })?;
    Some(Site {
        config,
        arguments: split_top(&args_text[..end], ','),
        end: i + 3 + close + 3 + open + 1 + end + 1,
    })
}

/// Follows names in one launch's expressions back through the host code before it.
struct Reader<'a> {
    code: &'a str,
    /// Where the launch starts: definitions are looked for before it.
    at: usize,
    /// Where the body of the function holding the launch opens: a definition counts there or at file scope,
    /// never inside another function (a kernel's own `int block_size = blockDim.x`).
    body: usize,
    arguments: Vec<String>,
    params: &'a [String],
    macros: &'a HashMap<String, String>,
}

const XYZ: [char; 3] = ['x', 'y', 'z'];

/// How many definitions deep a name is followed.
const MAX_DEPTH: usize = 6;

impl Reader<'_> {
    fn launch(&self, site: &Site, written: &str) -> HostLaunch {
        let dims = |i: usize| {
            site.config
                .get(i)
                .map(|t| self.vector(t))
                .unwrap_or_else(|| ["1".into(), "1".into(), "1".into()])
        };
        let (grid, block) = (dims(0), dims(1));
        let lookup = macro_lookup(self.macros);
        let values: Option<Vec<u64>> = block
            .iter()
            .map(|b| eval_int(b, &lookup).and_then(|v| u64::try_from(v).ok().filter(|&v| v > 0)))
            .collect();
        let written_block = site.config.get(1).map(|t| self.vector_names(t));
        let shared_written = site
            .config
            .get(2)
            .map(|s| normalized(s))
            .filter(|s| eval_int(s, &lookup) != Some(0));
        let grid_facts = [0, 1, 2].map(|d| self.grid_fact(&grid[d], &block, d));
        let shared_mem = shared_written
            .as_ref()
            .and_then(|s| self.shared_rule(s, &block, written_block.as_ref()));
        let size_asserts = self.size_asserts();
        let grid = grid.map(|g| unmarked(&g));
        let block = block.map(|b| unmarked(&b));
        HostLaunch {
            location: Location {
                line: self.code[..self.at].matches('\n').count() + 1,
                column: self.at - self.code[..self.at].rfind('\n').map_or(0, |n| n + 1) + 1,
            },
            file: None,
            offset: self.at,
            text: normalized(&written[..written.find(">>>").map_or(written.len(), |e| e + 3)]),
            grid,
            block_values: values.map(|v| [v[0], v[1], v[2]]),
            block,
            grid_facts,
            shared_mem,
            shared_mem_written: shared_written,
            size_asserts,
        }
    }

    /// `assert(n % 4 == 0)`, `assert(n >= 16)` (parts of `&&` too) in the function around the launch, for
    /// values the launch passes as a parameter.
    fn size_asserts(&self) -> Vec<SizeAssert> {
        let lookup = macro_lookup(self.macros);
        let text = &self.code[self.body..self.at];
        let mut out: Vec<SizeAssert> = Vec::new();
        for (i, _) in text.match_indices("assert") {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let rest = text[i + "assert".len()..].trim_start();
            let Some(close) = rest.starts_with('(').then(|| matching(rest)).flatten() else {
                continue;
            };
            let condition = normalized(&rest[1..close]);
            for part in condition.split("&&") {
                let flat: String = part.split_whitespace().collect();
                let (name, rule) = if let Some((lhs, k)) =
                    flat.strip_suffix("==0").and_then(|l| l.split_once('%'))
                {
                    (
                        lhs.to_string(),
                        eval_int(k, &lookup).map(|k| crate::size_rules::SizeRule {
                            multiple_of: u64::try_from(k).ok(),
                            min: None,
                        }),
                    )
                } else if let Some((lhs, m)) = flat.split_once(">=") {
                    (
                        lhs.to_string(),
                        eval_int(m, &lookup).map(|m| crate::size_rules::SizeRule {
                            multiple_of: None,
                            min: u64::try_from(m).ok(),
                        }),
                    )
                } else {
                    continue;
                };
                let name = normalized(&name);
                let (Some(rule), Some(i)) = (rule, self.arguments.iter().position(|a| *a == name))
                else {
                    continue;
                };
                let Some(param) = self.params.get(i) else {
                    continue;
                };
                match out.iter_mut().find(|a| a.param == *param) {
                    Some(a) => {
                        a.rule.multiple_of = a.rule.multiple_of.or(rule.multiple_of);
                        a.rule.min = a.rule.min.or(rule.min);
                        if !a.text.split("; ").any(|t| t == condition) {
                            a.text = format!("{}; {condition}", a.text);
                        }
                    }
                    None => out.push(SizeAssert {
                        param: param.clone(),
                        rule,
                        text: condition.clone(),
                    }),
                }
            }
        }
        out
    }

    /// A `dim3` argument as three expressions, followed to their definitions.
    fn vector(&self, text: &str) -> [String; 3] {
        let parts = self.vector_names(text);
        parts.map(|p| self.resolve(&p, self.at, 0))
    }

    /// A `dim3` argument as three expressions, before following scalar names.
    fn vector_names(&self, text: &str) -> [String; 3] {
        let t = normalized(text);
        let parts = inline_dim3(&t)
            .or_else(|| {
                t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
                    .then(|| self.dim3_definition(&t, self.at))
                    .flatten()
            })
            .unwrap_or_else(|| vec![t.clone()]);
        let get = |i: usize| parts.get(i).cloned().unwrap_or_else(|| "1".into());
        [get(0), get(1), get(2)]
    }

    /// `dim3 name(a, b)`, `dim3 name = dim3(a, b)`, `name = dim3(a, b);` nearest before `before`.
    fn dim3_definition(&self, name: &str, before: usize) -> Option<Vec<String>> {
        let (at, rest) = self.definition_site(name, before)?;
        let rest = rest.trim_start();
        let prefix = self.code[..at].trim_end();
        if prefix.ends_with("dim3") && (rest.starts_with('(') || rest.starts_with('{')) {
            return Some(split_top(&rest[1..matching(rest)?], ','));
        }
        let value = rest.strip_prefix('=')?;
        let value = normalized(&value[..value.find(';')?]);
        inline_dim3(&value)
    }

    /// The nearest `name` before `before` that is defined there (`name =`, or `dim3 name(`), with the
    /// text after it.
    fn definition_site(&self, name: &str, before: usize) -> Option<(usize, &str)> {
        let prefix = &self.code[..before];
        let bytes = prefix.as_bytes();
        let word = |i: usize| {
            bytes
                .get(i)
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
        };
        prefix.rmatch_indices(name).find_map(|(at, _)| {
            let end = at + name.len();
            if at > 0 && word(at - 1) || word(end) {
                return None;
            }
            if at < self.body && brace_depth(&prefix[..at]) != 0 {
                return None;
            }
            let rest = &self.code[end..];
            let t = rest.trim_start();
            let assigns = t.starts_with('=') && !t.starts_with("==");
            let constructs = (t.starts_with('(') || t.starts_with('{'))
                && prefix[..at].trim_end().ends_with("dim3");
            (assigns || constructs).then_some((at, rest))
        })
    }

    /// `text` with the launch's arguments named as parameters, macros as their values and host variables
    /// replaced by their definitions (nearest before `before`).
    fn resolve(&self, text: &str, before: usize, depth: usize) -> String {
        self.resolve_with(text, before, depth, &|_| None)
    }

    /// As [`Reader::resolve`], with `first` asked before anything else (the block's own names).
    fn resolve_with(
        &self,
        text: &str,
        before: usize,
        depth: usize,
        first: &dyn Fn(&str) -> Option<String>,
    ) -> String {
        let lookup = macro_lookup(self.macros);
        let replaced = substitute(text, &|w| {
            if let Some(named) = first(w) {
                return Some(named);
            }
            if let Some(i) = self.arguments.iter().position(|a| a == w) {
                return self.params.get(i).map(|p| format!("{PARAM}{p}"));
            }
            if let Some(v) = lookup(w) {
                return Some(v.to_string());
            }
            if depth >= MAX_DEPTH || w == "sizeof" {
                return None;
            }
            let (at, rest) = self.definition_site(w, before)?;
            let value = rest.trim_start().strip_prefix('=')?;
            let value = normalized(&value[..value.find(';')?]);
            (inline_dim3(&value).is_none()).then(|| self.resolve_with(&value, at, depth + 1, first))
        });
        normalized(&replaced)
    }

    /// The grid expression of dimension `d` as problem size over divisors, when every name in it is a
    /// parameter and every divisor a block size or a constant.
    fn grid_fact(&self, grid: &str, block: &[String; 3], d: usize) -> Option<GridFact> {
        if grid == "1" {
            return None;
        }
        let (problem, divisor) = ceil_parts(grid).unwrap_or((grid.to_string(), String::new()));
        let lookup = macro_lookup(self.macros);
        let divisors: Option<Vec<String>> = split_top(&divisor, '*')
            .iter()
            .map(|f| {
                let f = normalized(f);
                if let Some(c) = block_dim_named(&f, block, &[d]) {
                    return Some(format!("block_size_{}", XYZ[c]));
                }
                eval_int(&f, &lookup).map(|v| v.to_string())
            })
            .collect();
        (names_all(&problem, &|_| false) && !problem.is_empty()).then(|| {
            Some(GridFact {
                problem: unmarked(&problem),
                divisors: divisors?,
            })
        })?
    }

    /// The shared-memory expression in tuner names: a factor that is the block's size becomes
    /// `block_size_x`, `sizeof` of a built-in type its bytes; None when a name is left that is neither.
    fn shared_rule(
        &self,
        written: &str,
        block: &[String; 3],
        block_names: Option<&[String; 3]>,
    ) -> Option<String> {
        let lookup = macro_lookup(self.macros);
        // the block's variable (`block_size`) is the tuned block size wherever the expression names it
        let block_name = |w: &str| {
            block_names?
                .iter()
                .position(|b| b == w && b != "1")
                .map(|c| format!("block_size_{}", XYZ[c]))
        };
        let text = sizes_of(&self.resolve_with(written, self.at, 0, &block_name));
        let factors: Vec<String> = split_top(&text, '*')
            .iter()
            .map(|f| {
                let f = normalized(f);
                if let Some(c) = block_dim_named(&f, block, &[0, 1, 2]) {
                    return format!("block_size_{}", XYZ[c]);
                }
                eval_int(&f, &lookup).map_or(f, |v| v.to_string())
            })
            .collect();
        let rule = factors.join(" * ");
        names_all(&rule, &|w| w.starts_with("block_size_")).then(|| unmarked(&rule))
    }
}

/// Which block dimension `factor` is: the same text as the block's expression of a dimension in `dims`
/// (not 1).
fn block_dim_named(factor: &str, block: &[String; 3], dims: &[usize]) -> Option<usize> {
    dims.iter()
        .copied()
        .find(|&i| block[i] != "1" && normalized(&block[i]) == factor)
}

/// A marker before a name that is one of the kernel's parameters (reached through the launch's arguments),
/// so that a host variable that happens to share a parameter's name is not taken for it.
const PARAM: char = '@';

/// Whether every identifier of `text` is a marked parameter or passes `other`.
fn names_all(text: &str, other: &dyn Fn(&str) -> bool) -> bool {
    identifiers(text)
        .iter()
        .all(|&(s, e)| text[..s].ends_with(PARAM) || other(&text[s..e]))
}

/// `text` without parameter markers.
fn unmarked(text: &str) -> String {
    normalized(&text.replace(PARAM, ""))
}

#[cfg(test)]
#[path = "host_launch_tests.rs"]
mod tests;
