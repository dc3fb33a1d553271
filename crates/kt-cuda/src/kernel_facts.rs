//! The static facts about one kernel beyond its signature: helpers it calls (transitively), macros and
//! constants it uses, CUDA features it touches, and literal sizes that tie it to one launch configuration.
//! Facts of the helpers a kernel calls count as the kernel's own: a `__syncthreads` in a helper constrains the
//! kernel just the same.

use std::collections::{BTreeSet, HashMap, HashSet};

use tree_sitter::Node;

use crate::kernel::{
    AssumptionKind, Kernel, KernelFeatures, LaunchAssumption, LaunchBounds, TemplateParam,
};
use crate::preprocess::Prepared;
use crate::relations;
use crate::scope::{FileScope, FoundKernel, collapse, span_of, strip_parens};
use crate::signature;

const WARP_INTRINSICS: &[&str] = &[
    "__ballot_sync",
    "__ballot",
    "__any_sync",
    "__all_sync",
    "__uni_sync",
    "__activemask",
    "__syncwarp",
    "__match_any_sync",
    "__match_all_sync",
];

fn is_warp_intrinsic(name: &str) -> bool {
    name.starts_with("__shfl")
        || name.starts_with("__reduce_") && name.ends_with("_sync")
        || WARP_INTRINSICS.contains(&name)
}

fn is_atomic(name: &str) -> bool {
    name.starts_with("atomic") && name.len() > "atomic".len()
}

fn is_syncthreads(name: &str) -> bool {
    name.starts_with("__syncthreads")
}

/// Whether `word` occurs in `text` as a whole identifier.
fn word_in(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

pub(crate) fn analyse(prepared: &Prepared, file: &FileScope, found: &FoundKernel) -> Kernel {
    let text = &prepared.text;
    let definition = found.definition;
    let name = signature::function_name(definition, text).unwrap_or_default();
    let name_location = signature::function_declarator(definition)
        .and_then(|f| f.child_by_field_name("declarator"))
        .map_or_else(
            || prepared.location(definition.start_byte()),
            |n| prepared.location(n.start_byte()),
        );
    let outer = found.template.unwrap_or(definition);
    let span_node = with_linkage(outer);

    let template_params = found
        .template
        .map(|t| template_params(prepared, t))
        .unwrap_or_default();
    let macro_bodies: HashMap<&str, &str> = prepared
        .defines
        .iter()
        .map(|d| (d.name.as_str(), d.body.as_str()))
        .collect();
    // a macro given a default under its own `#ifndef` is a parameter (Kernel Tuner's convention), tuned
    // like a template parameter: the launch facts name it rather than its default
    let macro_defaults = macro_defaults(prepared, &prepared.text[outer.byte_range()]);
    let compile_time_names = template_params
        .iter()
        .map(|p| p.name.clone())
        .chain(macro_defaults.keys().cloned())
        .collect();
    let mut scan = Scan::new(prepared, file, &macro_bodies, compile_time_names, &name);
    // the whole definition, not only the body: macros and constants also appear in the parameter list,
    // in `__launch_bounds__` and in template defaults
    scan.walk(outer);
    scan.macros
        .extend(prepared.substituted_macros(span_node.start_byte(), span_node.end_byte()));
    add_macros_of_macros(&mut scan.macros, &macro_bodies);

    let tunable_template_params = tunable_template_names(&template_params);
    let tuned_names: Vec<String> = tunable_template_params
        .iter()
        .chain(macro_defaults.keys())
        .cloned()
        .collect();
    let bounds = launch_bounds(prepared, definition);
    let relations = relations::relations(
        prepared,
        outer,
        &relations::Context {
            template_names: &tuned_names,
            macro_bodies: &macro_bodies,
            launch_bounds: bounds.as_ref(),
            warp_intrinsics: !scan.warp.is_empty(),
        },
    );
    let mut features = scan.features;
    if !features.uses_dynamic_shared_memory && names_dynamic_shared_type(text, outer) {
        features.uses_shared_memory = true;
        features.uses_dynamic_shared_memory = true;
    }
    features.atomics = scan.atomics.into_iter().collect();
    features.warp_intrinsics = scan.warp.into_iter().collect();
    let qualified_name = found
        .namespaces
        .iter()
        .map(|n| format!("{n}::"))
        .chain(std::iter::once(name.clone()))
        .collect();
    let mutable_globals = crate::globals::written_by(prepared, file, definition, &scan.helpers);
    let params = signature::params(prepared, definition);
    let host_launches = launches_in_host_code(prepared, &name, &params);
    Kernel {
        name,
        params,
        extern_c: found.extern_c,
        launch_bounds: bounds,
        template_params,
        helpers: scan.helpers,
        macros_used: scan.macros.into_iter().collect(),
        constexprs_used: scan.constants.into_iter().collect(),
        launch_assumptions: scan.assumptions,
        features,
        span: span_of(prepared, span_node),
        name_location,
        origin_file: None,
        qualified_name,
        tunable_template_params,
        restrictions: relations.restrictions,
        grid_divisors: relations.grid_divisors,
        mutable_globals,
        // filled by the whole-file analysis, which lists the file's symbols
        constant_memory: Vec::new(),
        host_launches,
        macro_defaults,
    }
}

/// The `#ifndef NAME` / `#define NAME value` defaults whose name the kernel's text uses, name to value.
fn macro_defaults(
    prepared: &Prepared,
    kernel_text: &str,
) -> std::collections::BTreeMap<String, String> {
    let words: std::collections::HashSet<&str> = kernel_text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    prepared
        .defines
        .iter()
        .filter(|d| d.overridable && !d.function_like && !d.body.is_empty())
        .filter(|d| words.contains(d.name.as_str()))
        .map(|d| (d.name.clone(), d.body.clone()))
        .collect()
}

/// The kernel's launches in the file's host code, located in the user's text.
fn launches_in_host_code(
    prepared: &Prepared,
    name: &str,
    params: &[crate::kernel::KernelParam],
) -> Vec<crate::host_launch::HostLaunch> {
    if !prepared.text.contains("<<<") {
        return Vec::new();
    }
    let macros: HashMap<String, String> = prepared
        .defines
        .iter()
        .filter(|d| !d.function_like)
        .map(|d| (d.name.clone(), d.body.clone()))
        .collect();
    let names: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
    let mut launches = crate::host_launch::host_launches(&prepared.text, name, &names, &macros);
    for l in &mut launches {
        l.location = prepared.location(l.offset);
    }
    launches
}

/// The template parameters a tuner can set: values, not types or packs.
fn tunable_template_names(template_params: &[TemplateParam]) -> Vec<String> {
    template_params
        .iter()
        .filter(|t| !matches!(t.kind.as_str(), "typename" | "class") && !t.kind.contains("..."))
        .map(|t| t.name.clone())
        .collect()
}

/// The node a definition's span starts at: a definition inside `extern "C" { … }` or after `extern "C"`
/// starts at the linkage keyword.
fn with_linkage(outer: Node) -> Node {
    match outer.parent() {
        Some(p)
            if p.kind() == "linkage_specification"
                && p.child_by_field_name("body") == Some(outer) =>
        {
            p
        }
        _ => outer,
    }
}

/// Adds to `macros` the macros used by the macros in it, to the end of the chain.
fn add_macros_of_macros(macros: &mut BTreeSet<String>, macro_bodies: &HashMap<&str, &str>) {
    let mut pending: Vec<String> = macros.iter().cloned().collect();
    while let Some(m) = pending.pop() {
        for word in macro_bodies
            .get(m.as_str())
            .into_iter()
            .flat_map(|b| b.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        {
            if macro_bodies.contains_key(word) && macros.insert(word.to_string()) {
                pending.push(word.to_string());
            }
        }
    }
}

/// Whether the definition names a type that a helper declares as dynamic shared memory (`extern __shared__`
/// behind a struct or a template helper).
fn names_dynamic_shared_type(text: &str, outer: Node) -> bool {
    let body = &text[outer.byte_range()];
    crate::shared_helpers::dynamic_shared_types(text)
        .iter()
        .any(|t| word_in(body, t))
}

fn launch_bounds(prepared: &Prepared, definition: Node) -> Option<LaunchBounds> {
    let mut cursor = definition.walk();
    let node = definition
        .children(&mut cursor)
        .find(|c| c.kind() == "launch_bounds")?;
    let mut c = node.walk();
    let args: Vec<String> = node
        .named_children(&mut c)
        .map(|a| {
            prepared
                .original_text(a.start_byte(), a.end_byte())
                .to_string()
        })
        .collect();
    Some(LaunchBounds {
        max_threads_per_block: args.first().cloned().unwrap_or_default(),
        min_blocks_per_sm: args.get(1).cloned(),
    })
}

fn template_params(prepared: &Prepared, template: Node) -> Vec<TemplateParam> {
    let text = &prepared.text;
    let Some(list) = template.child_by_field_name("parameters") else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    list.named_children(&mut cursor)
        .filter_map(|p| {
            let original = |n: Node| {
                prepared
                    .original_text(n.start_byte(), n.end_byte())
                    .to_string()
            };
            match p.kind() {
                "type_parameter_declaration"
                | "optional_type_parameter_declaration"
                | "variadic_type_parameter_declaration" => {
                    let name = p
                        .child_by_field_name("name")
                        .or_else(|| p.named_child(0))
                        .map(|n| text[n.byte_range()].to_string())?;
                    let kind = p
                        .child(0)
                        .map_or("typename".to_string(), |k| text[k.byte_range()].to_string());
                    Some(TemplateParam {
                        name,
                        kind,
                        default: p.child_by_field_name("default_type").map(original),
                    })
                }
                "parameter_declaration"
                | "optional_parameter_declaration"
                | "variadic_parameter_declaration" => {
                    let declarator = p.child_by_field_name("declarator")?;
                    let name = signature::declared_name(declarator, text)
                        .unwrap_or_else(|| text[declarator.byte_range()].to_string());
                    let kind = p
                        .child_by_field_name("type")
                        .map(original)
                        .unwrap_or_default();
                    Some(TemplateParam {
                        name,
                        kind,
                        default: p.child_by_field_name("default_value").map(original),
                    })
                }
                _ => None,
            }
        })
        .collect()
}

struct Scan<'a, 't> {
    prepared: &'a Prepared,
    file: &'a FileScope<'t>,
    macro_bodies: &'a HashMap<&'a str, &'a str>,
    compile_time_names: HashSet<String>,
    features: KernelFeatures,
    atomics: BTreeSet<String>,
    warp: BTreeSet<String>,
    macros: BTreeSet<String>,
    constants: BTreeSet<String>,
    helpers: Vec<String>,
    visited: HashSet<String>,
    assumptions: Vec<LaunchAssumption>,
    /// Variables that hold a cooperative-groups tile (their `.sync()` is a warp barrier).
    tiles: HashSet<String>,
}

impl<'a, 't> Scan<'a, 't> {
    /// A scan of the kernel `name`, with nothing found yet.
    fn new(
        prepared: &'a Prepared,
        file: &'a FileScope<'t>,
        macro_bodies: &'a HashMap<&'a str, &'a str>,
        compile_time_names: HashSet<String>,
        name: &str,
    ) -> Self {
        Scan {
            prepared,
            file,
            macro_bodies,
            compile_time_names,
            features: KernelFeatures::default(),
            atomics: BTreeSet::new(),
            warp: BTreeSet::new(),
            macros: BTreeSet::new(),
            constants: BTreeSet::new(),
            helpers: Vec::new(),
            visited: HashSet::from([name.to_string()]),
            assumptions: Vec::new(),
            tiles: HashSet::new(),
        }
    }
}

impl<'t> Scan<'_, 't> {
    fn text(&self, node: Node) -> &str {
        &self.prepared.text[node.byte_range()]
    }

    fn original(&self, node: Node) -> String {
        self.prepared
            .original_text(node.start_byte(), node.end_byte())
            .to_string()
    }

    fn walk(&mut self, node: Node<'t>) {
        match node.kind() {
            "identifier" | "type_identifier" => {
                let name = self.text(node).to_string();
                match name.as_str() {
                    "blockDim" => self.features.uses_block_dim = true,
                    "gridDim" => self.features.uses_grid_dim = true,
                    "this_thread_block" | "this_grid" | "tiled_partition" => {
                        self.features.uses_cooperative_groups = true;
                    }
                    _ => {}
                }
                if self.macro_bodies.contains_key(name.as_str()) {
                    self.macros.insert(name.clone());
                }
                if self.file.constants.contains(&name) {
                    self.constants.insert(name);
                }
            }
            "namespace_identifier" if self.text(node) == "cooperative_groups" => {
                self.features.uses_cooperative_groups = true;
            }
            "call_expression" => self.call(node),
            "declaration" => self.declaration(node),
            "binary_expression" => self.binary(node),
            _ => {}
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk(child);
        }
    }

    fn call(&mut self, node: Node<'t>) {
        let Some(function) = node.child_by_field_name("function") else {
            return;
        };
        // `f<T>(…)` names the function through a template_function node
        let callee = match function.kind() {
            "template_function" => function.child_by_field_name("name").unwrap_or(function),
            _ => function,
        };
        if self.cooperative_sync(callee) {
            return;
        }
        if callee.kind() != "identifier" {
            return;
        }
        let name = self.text(callee).to_string();
        if is_atomic(&name) {
            self.atomics.insert(name);
        } else if is_warp_intrinsic(&name) {
            if name == "__syncwarp" {
                self.features.warp_barriers += 1;
            }
            self.warp.insert(name);
        } else if is_syncthreads(&name) {
            self.features.uses_syncthreads = true;
            self.features.barriers += 1;
        } else if let Some(&helper) = self.file.device_by_name.get(&name)
            && self.visited.insert(name.clone())
        {
            self.helpers.push(name);
            self.macros.extend(
                self.prepared
                    .substituted_macros(helper.start_byte(), helper.end_byte()),
            );
            self.walk(helper);
        }
    }

    /// `cg::sync(block)`, `block.sync()`, `this_thread_block().sync()`, `grid.sync()`: a block (or grid)
    /// barrier; `tile.sync()` on a `thread_block_tile` / `tiled_partition` is a warp barrier.
    fn cooperative_sync(&mut self, callee: Node<'t>) -> bool {
        let text = self.text(callee).to_string();
        let receiver = match callee.kind() {
            "field_expression"
                if callee
                    .child_by_field_name("field")
                    .is_some_and(|f| self.text(f) == "sync") =>
            {
                callee
                    .child_by_field_name("argument")
                    .map(|a| self.text(a).to_string())
            }
            "qualified_identifier" if text.ends_with("::sync") => {
                let call = callee.parent();
                call.and_then(|c| c.child_by_field_name("arguments"))
                    .and_then(|a| a.named_child(0))
                    .map(|a| self.text(a).to_string())
            }
            _ => return false,
        };
        let Some(receiver) = receiver else {
            return false;
        };
        self.features.uses_cooperative_groups = true;
        if self.tiles.contains(&receiver) {
            self.features.warp_barriers += 1;
        } else {
            self.features.uses_syncthreads = true;
            self.features.barriers += 1;
        }
        true
    }

    fn declaration(&mut self, node: Node<'t>) {
        let decl_text = self.text(node);
        if decl_text.contains("thread_block_tile")
            || decl_text.contains("tiled_partition")
            || decl_text.contains("coalesced_threads")
        {
            let mut cursor = node.walk();
            let names: Vec<String> = node
                .children_by_field_name("declarator", &mut cursor)
                .filter_map(|d| signature::declared_name(d, &self.prepared.text))
                .collect();
            self.tiles.extend(names);
        }
        let mut cursor = node.walk();
        let words: Vec<String> = node
            .children(&mut cursor)
            .filter(|c| matches!(c.kind(), "type_qualifier" | "storage_class_specifier"))
            .map(|c| self.text(c).to_string())
            .collect();
        if !words.iter().any(|w| w == "__shared__") {
            return;
        }
        self.features.uses_shared_memory = true;
        if words.iter().any(|w| w == "extern") {
            self.features.uses_dynamic_shared_memory = true;
            return;
        }
        let mut cursor = node.walk();
        for declarator in node.children_by_field_name("declarator", &mut cursor) {
            let mut d = Some(declarator);
            while let Some(current) = d {
                if current.kind() == "array_declarator"
                    && let Some(size) = current.child_by_field_name("size")
                    && !self.compile_time_names.contains(self.text(size))
                {
                    self.assumptions.push(LaunchAssumption {
                        kind: AssumptionKind::FixedSharedArray,
                        text: collapse(&self.original(node)),
                        value: collapse(&self.original(size)),
                        location: self.prepared.location(node.start_byte()),
                    });
                }
                d = current.child_by_field_name("declarator");
            }
        }
    }

    /// `blockIdx.x * 256`, `threadIdx.x < 128`: a literal (or macro, or template constant) where the launch
    /// configuration should be read from `blockDim`.
    fn binary(&mut self, node: Node<'t>) {
        let (Some(left), Some(op), Some(right)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("operator"),
            node.child_by_field_name("right"),
        ) else {
            return;
        };
        let op = self.text(op).to_string();
        let kind = match op.as_str() {
            "*" => AssumptionKind::LiteralBlockSize,
            "<" | "<=" | ">" | ">=" => AssumptionKind::LiteralThreadBound,
            _ => return,
        };
        // `blockIdx.x * 256` (indexing) and `256 * gridDim.x` (a grid-stride loop) both assume the block size
        let builtins: &[&str] = match kind {
            AssumptionKind::LiteralBlockSize => &["blockIdx", "gridDim"],
            _ => &["threadIdx"],
        };
        let pairs = [(left, right), (right, left)];
        for (index_side, size_side) in pairs {
            let is_builtin = builtins
                .iter()
                .any(|b| self.is_builtin_component(index_side, b));
            if is_builtin && self.is_fixed_size(size_side) {
                let kind = if kind == AssumptionKind::LiteralBlockSize
                    && self.is_builtin_component(index_side, "blockIdx")
                    && !plus_thread_index(node, self.prepared, index_side)
                {
                    AssumptionKind::TileSize
                } else {
                    kind
                };
                self.assumptions.push(LaunchAssumption {
                    kind,
                    text: collapse(&self.original(node)),
                    value: collapse(&self.original(size_side)),
                    location: self.prepared.location(node.start_byte()),
                });
                return;
            }
        }
    }

    fn is_builtin_component(&self, node: Node, builtin: &str) -> bool {
        let node = strip_parens(node);
        node.kind() == "field_expression"
            && node
                .child_by_field_name("argument")
                .is_some_and(|a| self.text(a) == builtin)
    }

    fn is_fixed_size(&self, node: Node) -> bool {
        let node = strip_parens(node);
        match node.kind() {
            "number_literal" => self
                .text(node)
                .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                .parse::<u64>()
                .is_ok_and(|v| v > 1),
            "identifier" => {
                let name = self.text(node);
                // a template parameter (or a macro's `#ifndef` default) is tuned, not fixed: it is offered
                // as a tunable parameter instead
                !self.compile_time_names.contains(name)
                    && (self.file.constants.contains(name)
                        || self.macro_bodies.get(name).is_some_and(|b| !b.is_empty()))
            }
            _ => false,
        }
    }
}

/// Whether `blockIdx.c * SIZE` is the left operand of `… + threadIdx.c` (then SIZE is the block's thread
/// count; without the `threadIdx` term it is the tile of work each block covers).
fn plus_thread_index(product: Node, prepared: &Prepared, block_index: Node) -> bool {
    let text = &prepared.text;
    let component = strip_parens(block_index)
        .child_by_field_name("field")
        .map(|f| text[f.byte_range()].to_string())
        .unwrap_or_default();
    let mut node = product;
    while let Some(parent) = node.parent() {
        if parent.kind() == "parenthesized_expression" {
            node = parent;
            continue;
        }
        if parent.kind() != "binary_expression"
            || parent
                .child_by_field_name("operator")
                .is_none_or(|o| &text[o.byte_range()] != "+")
        {
            return false;
        }
        let other = if parent.child_by_field_name("left") == Some(node) {
            parent.child_by_field_name("right")
        } else {
            parent.child_by_field_name("left")
        };
        return other.is_some_and(|o| {
            collapse(&text[strip_parens(o).byte_range()]) == format!("threadIdx.{component}")
        });
    }
    false
}
