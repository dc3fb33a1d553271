//! A file cut into its file-scope items — functions, types, macros, constants, includes — each with its
//! byte range, the names it defines and the identifiers it uses, and the wrappers around them (namespaces,
//! `extern "C" { … }`, `#if` blocks) whose opening and closing lines must come along with anything kept
//! inside. Unit extraction (unit.rs) and putting a new kernel back into a whole program (splice.rs) both read
//! a file this way.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use crate::lexer::{self, TokenKind};
use crate::preprocess::Prepared;
use crate::scope::has_specifier;
use crate::signature;

/// What a file-scope item is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Kernel,
    DeviceFunction,
    /// `__device__`/`__global__` function declarations without a body.
    DevicePrototype,
    /// `struct`, `class`, `union`, `enum`, `typedef`, `using X = …`.
    Type,
    Macro,
    /// `const`/`constexpr` file-scope variables.
    Constant,
    /// `__constant__`, `__device__`, `__managed__` variables.
    DeviceVariable,
    Include,
    /// `using namespace X;`, `namespace cg = cooperative_groups;`.
    Using,
    HostFunction,
    HostVariable,
    /// Anything else at file scope (`#pragma`, `#undef`, stray statements).
    Other,
}

impl ItemKind {
    /// Items that can never be part of a device-only unit.
    pub fn is_host(self) -> bool {
        matches!(self, ItemKind::HostFunction | ItemKind::HostVariable)
    }
}

/// One file-scope item.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub kind: ItemKind,
    /// Names it defines (a function's, a type's and its enumerators', a macro's, variables').
    pub names: Vec<String>,
    /// Byte range in the original text.
    pub start: usize,
    pub end: usize,
    /// Identifiers in its code (comments and strings excluded).
    pub uses: BTreeSet<String>,
    /// For includes: the header as written and whether it is `<…>`.
    pub header: Option<(String, bool)>,
}

/// Opening, middle (`#else`) and closing lines of a namespace, linkage block or `#if` block, and the range
/// they enclose: emitted when any kept item lies inside.
#[derive(Debug, Clone)]
pub(crate) struct Wrapper {
    pub parts: Vec<(usize, usize)>,
    pub start: usize,
    pub end: usize,
    /// Identifiers its lines test (`#ifdef STANDARD_DATASET`, `#if defined(X) && N > 4`): macros a kept
    /// wrapper needs, or the unit takes another branch than the file does.
    pub uses: BTreeSet<String>,
}

pub(crate) struct Items {
    pub items: Vec<Item>,
    pub wrappers: Vec<Wrapper>,
}

/// Cuts the file behind `prepared` (with its tree's root) into items.
pub(crate) fn collect(prepared: &Prepared, root: Node) -> Items {
    let mut c = Collector {
        prepared,
        tokens: lexer::tokenize(&prepared.original),
        out: Items {
            items: Vec::new(),
            wrappers: Vec::new(),
        },
    };
    c.children(root);
    c.out.items.sort_by_key(|i| i.start);
    c.out
}

struct Collector<'a> {
    prepared: &'a Prepared,
    tokens: Vec<lexer::Token>,
    out: Items,
}

impl Collector<'_> {
    fn text(&self, node: Node) -> &str {
        &self.prepared.text[node.byte_range()]
    }

    /// A range of the parsed text as a range of the original text.
    fn original_range(&self, start: usize, end: usize) -> (usize, usize) {
        let s = self.prepared.original_offset(start);
        let piece = self.prepared.original_text(start, end);
        (s, s + piece.len())
    }

    /// The end of the line `pos` (original offset) is on, newline excluded.
    fn line_end(&self, pos: usize) -> usize {
        let text = &self.prepared.original;
        text[pos..].find('\n').map_or(text.len(), |n| pos + n)
    }

    fn children(&mut self, node: Node) {
        let mut cursor = node.walk();
        let kids: Vec<Node> = node.named_children(&mut cursor).collect();
        for child in kids {
            self.visit(child);
        }
    }

    fn visit(&mut self, node: Node) {
        match node.kind() {
            "comment" => {}
            "namespace_definition" => self.namespace(node),
            "linkage_specification" => match node.child_by_field_name("body") {
                Some(body) if body.kind() == "declaration_list" => self.block(node, body),
                _ => self.item(node),
            },
            "preproc_if" | "preproc_ifdef" => self.conditional(node),
            _ => self.item(node),
        }
    }

    fn namespace(&mut self, node: Node) {
        match node.child_by_field_name("body") {
            Some(body) => self.block(node, body),
            None => self.item(node),
        }
    }

    /// `namespace ns {` … `}` or `extern "C" {` … `}`.
    fn block(&mut self, node: Node, body: Node) {
        let (start, end) = self.original_range(node.start_byte(), node.end_byte());
        let (body_start, body_end) = self.original_range(body.start_byte(), body.end_byte());
        self.out.wrappers.push(Wrapper {
            parts: vec![
                (start, body_start + 1),
                (body_end.saturating_sub(1), body_end),
            ],
            start,
            end,
            uses: BTreeSet::new(),
        });
        let mut cursor = body.walk();
        let kids: Vec<Node> = body.named_children(&mut cursor).collect();
        for child in kids {
            self.visit(child);
        }
    }

    /// `#if …` / `#ifdef …` with its `#elif`/`#else` branches and `#endif`.
    fn conditional(&mut self, node: Node) {
        let (start, end) = self.original_range(node.start_byte(), node.end_byte());
        let mut parts = vec![(start, self.line_end(start))];
        let mut branch = Some(node);
        while let Some(b) = branch {
            let skip: Vec<Option<Node>> = vec![
                b.child_by_field_name("name"),
                b.child_by_field_name("condition"),
                b.child_by_field_name("alternative"),
            ];
            let mut cursor = b.walk();
            let kids: Vec<Node> = b
                .named_children(&mut cursor)
                .filter(|k| !skip.contains(&Some(*k)))
                .collect();
            for child in kids {
                self.visit(child);
            }
            branch = b.child_by_field_name("alternative");
            if let Some(alt) = branch {
                let (s, _) = self.original_range(alt.start_byte(), alt.end_byte());
                parts.push((s, self.line_end(s)));
            }
        }
        let mut cursor = node.walk();
        if let Some(endif) = node.children(&mut cursor).find(|c| c.kind() == "#endif") {
            let (s, _) = self.original_range(endif.start_byte(), endif.end_byte());
            parts.push((s, self.line_end(s)));
        }
        let uses = parts
            .iter()
            .flat_map(|&(s, e)| self.identifiers_in(s, e))
            .collect();
        self.out.wrappers.push(Wrapper {
            parts,
            start,
            end,
            uses,
        });
    }

    /// Identifiers between two original offsets (comments and strings excluded). The tokens are in source
    /// order: a binary search finds the first, so a file of many items is read once, not once per item
    /// (800k device functions took minutes).
    fn identifiers_in(&self, start: usize, end: usize) -> Vec<String> {
        let first = self.tokens.partition_point(|t| t.start < start);
        self.tokens[first..]
            .iter()
            .take_while(|t| t.start < end)
            .filter(|t| t.kind == TokenKind::Ident && t.end <= end)
            .map(|t| t.text(&self.prepared.original).to_string())
            .collect()
    }

    fn item(&mut self, node: Node) {
        let (kind, names, header) = self.classify(node);
        let mut end_byte = node.end_byte();
        // `struct S { … };` leaves its `;` as a sibling
        if let Some(next) = node.next_sibling()
            && next.kind() == ";"
            && !next.is_named()
        {
            end_byte = next.end_byte();
        }
        let (start, mut end) = self.original_range(node.start_byte(), end_byte);
        // directives end at their line; do not swallow the newline
        while end > start && self.prepared.original.as_bytes()[end - 1] == b'\n' {
            end -= 1;
        }
        let uses = self.identifiers_in(start, end).into_iter().collect();
        self.out.items.push(Item {
            kind,
            names,
            start,
            end,
            uses,
            header,
        });
    }

    fn classify(&self, node: Node) -> (ItemKind, Vec<String>, Option<(String, bool)>) {
        let text = &self.prepared.text;
        match node.kind() {
            "preproc_include" => {
                let path = node
                    .child_by_field_name("path")
                    .map(|p| self.text(p).to_string())
                    .unwrap_or_default();
                let system = path.starts_with('<');
                let header = path
                    .trim_matches(|c| matches!(c, '<' | '>' | '"'))
                    .to_string();
                (ItemKind::Include, Vec::new(), Some((header, system)))
            }
            "preproc_def" | "preproc_function_def" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| self.text(n).to_string());
                (ItemKind::Macro, name.into_iter().collect(), None)
            }
            "function_definition" => {
                let name = signature::function_name(node, text)
                    .map(|n| last_segment(&n))
                    .into_iter()
                    .collect();
                let kind = if has_specifier(node, text, "__global__") {
                    ItemKind::Kernel
                } else if has_specifier(node, text, "__device__") {
                    ItemKind::DeviceFunction
                } else {
                    ItemKind::HostFunction
                };
                (kind, name, None)
            }
            "template_declaration" | "linkage_specification" => {
                let inner = {
                    let mut cursor = node.walk();
                    node.named_children(&mut cursor)
                        .filter(|c| {
                            !matches!(c.kind(), "template_parameter_list" | "string_literal")
                        })
                        .last()
                };
                match inner {
                    Some(i) => self.classify(i),
                    None => (ItemKind::Other, Vec::new(), None),
                }
            }
            "declaration" => self.declaration(node),
            "struct_specifier" | "class_specifier" | "union_specifier" | "enum_specifier" => {
                (ItemKind::Type, type_names(node, text), None)
            }
            "type_definition" => {
                let mut names = Vec::new();
                if let Some(t) = node.child_by_field_name("type") {
                    names.extend(type_names(t, text));
                }
                let mut cursor = node.walk();
                for d in node.children_by_field_name("declarator", &mut cursor) {
                    if let Some(n) = declarator_name(d, text) {
                        names.push(n);
                    }
                }
                (ItemKind::Type, names, None)
            }
            "alias_declaration" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| self.text(n).to_string());
                (ItemKind::Type, name.into_iter().collect(), None)
            }
            "namespace_alias_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| self.text(n).to_string());
                (ItemKind::Using, name.into_iter().collect(), None)
            }
            "using_declaration" => (ItemKind::Using, Vec::new(), None),
            _ => (ItemKind::Other, Vec::new(), None),
        }
    }

    fn declaration(&self, node: Node) -> (ItemKind, Vec<String>, Option<(String, bool)>) {
        let text = &self.prepared.text;
        let words: Vec<&str> = (0..node.child_count())
            .filter_map(|i| node.child(i))
            .filter(|c| {
                matches!(
                    c.kind(),
                    "type_qualifier" | "storage_class_specifier" | "attribute_specifier"
                ) || !c.is_named()
            })
            .map(|c| &text[c.byte_range()])
            .collect();
        let has = |w: &str| words.contains(&w) || has_specifier(node, text, w);
        let mut names = Vec::new();
        if let Some(t) = node.child_by_field_name("type") {
            names.extend(
                type_names(t, text)
                    .into_iter()
                    .filter(|_| t.child_by_field_name("body").is_some()),
            );
        }
        let mut cursor = node.walk();
        let mut is_function = false;
        for d in node.children_by_field_name("declarator", &mut cursor) {
            is_function |= signature::function_declarator_of(d).is_some();
            if let Some(n) = declarator_name(d, text) {
                names.push(last_segment(&n));
            }
        }
        let kind = if is_function {
            if has("__device__") || has("__global__") {
                ItemKind::DevicePrototype
            } else {
                ItemKind::HostFunction
            }
        } else if has("__constant__") || has("__device__") || has("__managed__") {
            ItemKind::DeviceVariable
        } else if has("const") || has("constexpr") {
            ItemKind::Constant
        } else if node
            .child_by_field_name("type")
            .is_some_and(|t| t.child_by_field_name("body").is_some())
            && node.child_by_field_name("declarator").is_none()
        {
            ItemKind::Type
        } else if node.child_by_field_name("declarator").is_none() {
            ItemKind::Other
        } else {
            ItemKind::HostVariable
        };
        (kind, names, None)
    }
}

fn last_segment(name: &str) -> String {
    name.rsplit("::").next().unwrap_or(name).trim().to_string()
}

/// The name of a struct/class/union/enum specifier and, for an enum, its enumerators.
fn type_names(node: Node, text: &str) -> Vec<String> {
    let mut names: Vec<String> = node
        .child_by_field_name("name")
        .map(|n| text[n.byte_range()].to_string())
        .into_iter()
        .collect();
    if node.kind() == "enum_specifier"
        && let Some(body) = node.child_by_field_name("body")
    {
        let mut cursor = body.walk();
        for e in body.named_children(&mut cursor) {
            if let Some(n) = e.child_by_field_name("name") {
                names.push(text[n.byte_range()].to_string());
            }
        }
    }
    names
}

/// The name a (possibly nested) declarator declares, including type names of typedefs.
fn declarator_name(declarator: Node, text: &str) -> Option<String> {
    let mut node = declarator;
    loop {
        match node.kind() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "qualified_identifier"
            | "primitive_type" => {
                return Some(text[node.byte_range()].to_string());
            }
            _ => node = node.child_by_field_name("declarator")?,
        }
    }
}

/// Whether a system header (one no include directory holds) can give device code anything, so that the
/// unit keeps its `#include`: the CUDA device headers and the C/C++ headers whose names device code uses
/// (kt answers those under NVRTC). Any other — `<stdio.h>`, `<strings.h>`, `<exception>`, `<iostream>`,
/// `<cuda_runtime.h>`, `<cublas_v2.h>`, `<sys/time.h>` — contributes nothing a kernel can use (NVRTC
/// declares `printf` and the device runtime itself) and never reaches NVRTC, where it would not compile.
pub(crate) fn device_usable_header(header: &str) -> bool {
    const DEVICE: &[&str] = &[
        "cuda_fp16.h",
        "cuda_bf16.h",
        "cuda_fp8.h",
        "cuda_fp6.h",
        "cuda_fp4.h",
        "cuda_fp16.hpp",
        "cuda_bf16.hpp",
        "mma.h",
        "cooperative_groups.h",
        "cuda_pipeline.h",
        "cuda_pipeline_primitives.h",
        "cuda_awbarrier.h",
        "cuda_awbarrier_primitives.h",
        "curand_kernel.h",
        "vector_types.h",
        "vector_functions.h",
        "device_functions.h",
        "device_atomic_functions.h",
        "sm_20_intrinsics.h",
        "sm_30_intrinsics.h",
        "sm_32_intrinsics.h",
        "sm_35_intrinsics.h",
        "sm_60_atomic_functions.h",
        "sm_61_intrinsics.h",
        "math_constants.h",
        "math_functions.h",
        "cuComplex.h",
        "cuda_texture_types.h",
        "texture_fetch_functions.h",
        "surface_functions.h",
        "math.h",
        "cmath",
        "stdint.h",
        "cstdint",
        "float.h",
        "cfloat",
        "limits.h",
        "climits",
        "limits",
        "assert.h",
        "cassert",
        "type_traits",
        "stddef.h",
        "cstddef",
    ];
    DEVICE.contains(&header)
        || ["cooperative_groups/", "cuda/", "cub/", "crt/"]
            .iter()
            .any(|p| header.starts_with(p))
}
