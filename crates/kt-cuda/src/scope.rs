//! The file-scope walk over the syntax tree: which definitions are kernels, which are `__device__` helpers,
//! which names are file-scope constants. Both the whole-file analysis (source.rs) and one kernel's facts
//! (kernel_facts.rs) read it; it depends on neither.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::{Node, Parser, Tree};

use crate::error::CudaError;
use crate::location::Span;
use crate::preprocess::Prepared;
use crate::signature;

/// How deeply the syntax tree may nest. kt's walks over the tree recurse, so a file nested deeper (20,000
/// braces, parentheses, `#if`s or a chain of `a + a + …`) would overflow the stack; real kernels stay far below
/// (deeply templated library code reaches about 100).
pub const MAX_SYNTAX_DEPTH: usize = 1000;

/// Parses `text` (tree-sitter's parser itself does not recurse) and refuses a tree nested deeper than
/// [`MAX_SYNTAX_DEPTH`], measured without recursion.
pub(crate) fn syntax_tree(text: &str) -> Result<Tree, CudaError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_cuda::LANGUAGE.into())
        .map_err(|e| CudaError::Grammar(e.to_string()))?;
    let tree = parser
        .parse(text, None)
        .ok_or_else(|| CudaError::Grammar("the parser returned no tree".into()))?;
    if let Some(line) = deeper_than(&tree, MAX_SYNTAX_DEPTH) {
        return Err(CudaError::TooDeeplyNested {
            limit: MAX_SYNTAX_DEPTH,
            line,
        });
    }
    Ok(tree)
}

/// The 1-based line where the tree first nests deeper than `limit`, walking it with a cursor (no recursion).
fn deeper_than(tree: &Tree, limit: usize) -> Option<usize> {
    let mut cursor = tree.walk();
    let mut depth = 0usize;
    loop {
        if depth > limit {
            return Some(cursor.node().start_position().row + 1);
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
            depth -= 1;
        }
    }
}

pub(crate) fn span_of(prepared: &Prepared, node: Node) -> Span {
    Span {
        start: prepared.location(node.start_byte()),
        end: prepared.location(node.end_byte()),
    }
}

/// A `__global__` definition found in the tree, before analysis.
pub(crate) struct FoundKernel<'t> {
    pub definition: Node<'t>,
    /// The template_declaration around it, if any.
    pub template: Option<Node<'t>>,
    pub extern_c: bool,
    /// Enclosing namespaces, outermost first (`["blas"]` for `namespace blas { … }`).
    pub namespaces: Vec<String>,
}

/// File-scope facts the kernels' analysis looks things up in.
pub(crate) struct FileScope<'t> {
    pub kernels: Vec<FoundKernel<'t>>,
    pub device_functions: Vec<(String, Node<'t>)>,
    pub device_by_name: HashMap<String, Node<'t>>,
    pub constants: BTreeSet<String>,
    /// `struct`/`class` definitions with a body, by name (the first wins).
    pub structs: HashMap<String, Node<'t>>,
    /// `typedef T name;` and `using name = T;`: name → the aliased type as written.
    pub typedefs: HashMap<String, String>,
}

impl<'t> FileScope<'t> {
    pub fn collect(prepared: &Prepared, root: Node<'t>) -> Self {
        let mut scope = FileScope {
            kernels: Vec::new(),
            device_functions: Vec::new(),
            device_by_name: HashMap::new(),
            constants: BTreeSet::new(),
            structs: HashMap::new(),
            typedefs: HashMap::new(),
        };
        scope.visit(prepared, root, false, None);
        scope
    }

    fn record_struct(&mut self, text: &str, node: Node<'t>) {
        if let (Some(name), Some(_)) = (
            node.child_by_field_name("name"),
            node.child_by_field_name("body"),
        ) {
            self.structs
                .entry(text[name.byte_range()].to_string())
                .or_insert(node);
        }
    }

    /// Records what `node` declares at file scope and walks into the nodes that hold more declarations.
    fn visit(
        &mut self,
        prepared: &Prepared,
        node: Node<'t>,
        extern_c: bool,
        template: Option<Node<'t>>,
    ) {
        let text = &prepared.text;
        match node.kind() {
            "function_definition" => self.record_function(text, node, extern_c, template),
            "linkage_specification" => {
                let is_c = node
                    .child_by_field_name("value")
                    .is_some_and(|v| &text[v.byte_range()] == "\"C\"");
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.kind() != "string_literal" {
                        self.visit(prepared, child, extern_c || is_c, None);
                    }
                }
            }
            "template_declaration" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.visit(prepared, child, extern_c, Some(node));
                }
            }
            "struct_specifier" | "class_specifier" => self.record_struct(text, node),
            "type_definition" => self.record_typedef(text, node),
            "alias_declaration" => {
                if let (Some(n), Some(t)) = (
                    node.child_by_field_name("name"),
                    node.child_by_field_name("type"),
                ) {
                    self.typedefs
                        .entry(text[n.byte_range()].to_string())
                        .or_insert_with(|| collapse(&text[t.byte_range()]));
                }
            }
            "declaration" => self.record_declaration(text, node),
            "translation_unit"
            | "declaration_list"
            | "namespace_definition"
            | "preproc_if"
            | "preproc_ifdef"
            | "preproc_else"
            | "preproc_elif"
            | "preproc_elifdef" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.visit(prepared, child, extern_c, None);
                }
            }
            _ => {}
        }
    }

    /// A `__global__` definition (with the namespaces around it) or a `__device__` helper.
    fn record_function(
        &mut self,
        text: &str,
        node: Node<'t>,
        extern_c: bool,
        template: Option<Node<'t>>,
    ) {
        let Some(name) = signature::function_name(node, text) else {
            return;
        };
        if has_specifier(node, text, "__global__") {
            let mut namespaces = Vec::new();
            let mut up = node.parent();
            while let Some(p) = up {
                if p.kind() == "namespace_definition"
                    && let Some(n) = p.child_by_field_name("name")
                {
                    namespaces.insert(0, text[n.byte_range()].to_string());
                }
                up = p.parent();
            }
            self.kernels.push(FoundKernel {
                definition: node,
                template,
                extern_c,
                namespaces,
            });
        } else if has_specifier(node, text, "__device__") {
            self.device_by_name.entry(name.clone()).or_insert(node);
            self.device_functions.push((name, node));
        }
    }

    /// `typedef T Name;`: the struct it defines, and what Name stands for.
    fn record_typedef(&mut self, text: &str, node: Node<'t>) {
        let mut cursor = node.walk();
        let ty = node.child_by_field_name("type");
        if let Some(t) = ty
            && matches!(t.kind(), "struct_specifier" | "class_specifier")
        {
            self.record_struct(text, t);
        }
        for d in node.children_by_field_name("declarator", &mut cursor) {
            if let (Some(t), "type_identifier") = (ty, d.kind()) {
                let name = text[d.byte_range()].to_string();
                let target = match t.kind() {
                    // `typedef struct { … } Name;` names the struct itself
                    "struct_specifier" | "class_specifier"
                        if t.child_by_field_name("name").is_none() =>
                    {
                        if t.child_by_field_name("body").is_some() {
                            self.structs.entry(name.clone()).or_insert(t);
                        }
                        name.clone()
                    }
                    "struct_specifier" | "class_specifier" => t
                        .child_by_field_name("name")
                        .map_or(name.clone(), |n| text[n.byte_range()].to_string()),
                    _ => collapse(&text[t.byte_range()]),
                };
                if target != name {
                    self.typedefs.entry(name).or_insert(target);
                }
            }
        }
    }

    /// A declaration: the struct it defines, and a file-scope constant (constexpr, or const with an
    /// initializer).
    fn record_declaration(&mut self, text: &str, node: Node<'t>) {
        if let Some(t) = node.child_by_field_name("type")
            && matches!(t.kind(), "struct_specifier" | "class_specifier")
        {
            self.record_struct(text, t);
        }
        let is_constant = (0..node.child_count())
            .filter_map(|i| node.child(i))
            .any(|c| matches!(&text[c.byte_range()], "constexpr" | "const"));
        if is_constant {
            let mut cursor = node.walk();
            for d in node.children_by_field_name("declarator", &mut cursor) {
                if d.kind() == "init_declarator"
                    && let Some(name) = signature::declared_name(d, text)
                {
                    self.constants.insert(name);
                }
            }
        }
    }
}

/// Text with every run of whitespace made one space.
pub(crate) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The expression inside any number of parentheses.
pub(crate) fn strip_parens(mut node: Node) -> Node {
    while node.kind() == "parenthesized_expression" {
        match node.named_child(0) {
            Some(inner) => node = inner,
            None => break,
        }
    }
    node
}

/// Whether a function definition carries a specifier such as `__global__` among its own children (the
/// grammar puts it there as an anonymous token, or as a type_qualifier / storage class in some positions).
pub(crate) fn has_specifier(function: Node, text: &str, specifier: &str) -> bool {
    let mut cursor = function.walk();
    function.children(&mut cursor).any(|c| {
        matches!(
            c.kind(),
            "type_qualifier" | "storage_class_specifier" | "attribute_specifier"
        ) && &text[c.byte_range()] == specifier
            || c.kind() == specifier
    })
}

#[cfg(test)]
mod depth_tests {
    use super::*;

    fn kernel_around(body: &str) -> String {
        format!("__global__ void k(float *x, int n) {{\n{body}\n}}\n")
    }

    fn nested_parens(levels: usize) -> String {
        kernel_around(&format!(
            "x[0] = {}1{};",
            "(".repeat(levels),
            ")".repeat(levels)
        ))
    }

    fn nested_braces(levels: usize) -> String {
        kernel_around(&format!(
            "{}x[0] = 1;{}",
            "{".repeat(levels),
            "}".repeat(levels)
        ))
    }

    fn nested_ifs(levels: usize) -> String {
        kernel_around(&format!(
            "{}x[0] = 1;\n{}",
            "#if 1\n".repeat(levels),
            "#endif\n".repeat(levels)
        ))
    }

    fn long_sum(terms: usize) -> String {
        kernel_around(&format!("x[0] = {};", vec!["n"; terms].join(" + ")))
    }

    /// Runs `f` on a thread with the stack of a tokio worker (2 MiB): a stack overflow aborts the test binary.
    fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn twenty_thousand_levels_of_any_nesting_are_a_clear_error_not_a_crash() {
        for (what, text) in [
            ("parentheses", nested_parens(20_000)),
            ("braces", nested_braces(20_000)),
            ("#if", nested_ifs(20_000)),
            ("a + a + …", long_sum(100_000)),
        ] {
            let result = on_small_stack(move || crate::parse(&text).map(|_| ()));
            match result {
                Err(CudaError::TooDeeplyNested { limit, .. }) => {
                    assert_eq!(limit, MAX_SYNTAX_DEPTH)
                }
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    /// The deepest input of each kind that the limit lets through is analysed on a 2 MiB stack: the limit is low
    /// enough for kt's recursive walks.
    #[test]
    fn the_deepest_accepted_nesting_of_each_kind_is_analysed_on_a_small_stack() {
        type MakeInput = fn(usize) -> String;
        let kinds: [(&str, MakeInput); 4] = [
            ("parentheses", nested_parens),
            ("braces", nested_braces),
            ("#if", nested_ifs),
            ("a + a + …", long_sum),
        ];
        for (what, make) in kinds {
            // The largest size whose tree stays within the limit (binary search on the depth check alone).
            let (mut low, mut high) = (1usize, 4 * MAX_SYNTAX_DEPTH);
            while low + 1 < high {
                let mid = (low + high) / 2;
                if syntax_tree(&make(mid)).is_ok() {
                    low = mid;
                } else {
                    high = mid;
                }
            }
            let text = make(low);
            let result = on_small_stack(move || crate::parse_tolerant(&text).map(|_| ()));
            assert!(result.is_ok(), "{what} at {low}: {result:?}");
        }
    }
}
