//! Reading a function's name and parameter list from the tree. Only the kernel's own `parameter_list` is
//! read: helpers' and other kernels' parameters never leak in (the thesis framework merged the parameters of
//! every function in the file).

use tree_sitter::Node;

use crate::kernel::KernelParam;
use crate::preprocess::Prepared;

/// The function_declarator of a definition, looking through pointer/reference/attributed declarators.
pub(crate) fn function_declarator(definition: Node) -> Option<Node> {
    let mut node = definition.child_by_field_name("declarator")?;
    loop {
        if node.kind() == "function_declarator" {
            return Some(node);
        }
        node = node.child_by_field_name("declarator")?;
    }
}

/// The function_declarator inside a declaration's declarator, if it declares a function.
pub(crate) fn function_declarator_of(declarator: Node) -> Option<Node> {
    let mut node = declarator;
    loop {
        if node.kind() == "function_declarator" {
            return Some(node);
        }
        node = node.child_by_field_name("declarator")?;
    }
}

pub(crate) fn function_name(definition: Node, text: &str) -> Option<String> {
    let declarator = function_declarator(definition)?.child_by_field_name("declarator")?;
    Some(text[declarator.byte_range()].to_string())
}

/// The identifier a (possibly nested) declarator declares.
pub(crate) fn declared_name(declarator: Node, text: &str) -> Option<String> {
    let mut node = declarator;
    loop {
        match node.kind() {
            "identifier" | "field_identifier" | "qualified_identifier" => {
                return Some(text[node.byte_range()].to_string());
            }
            _ => node = node.child_by_field_name("declarator")?,
        }
    }
}

pub(crate) fn params(prepared: &Prepared, definition: Node) -> Vec<KernelParam> {
    let Some(list) =
        function_declarator(definition).and_then(|f| f.child_by_field_name("parameters"))
    else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    list.named_children(&mut cursor)
        .filter(|p| {
            matches!(
                p.kind(),
                "parameter_declaration" | "optional_parameter_declaration"
            )
        })
        .map(|p| param(prepared, p))
        .collect()
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn param(prepared: &Prepared, decl: Node) -> KernelParam {
    let text = &prepared.text;
    let mut is_const = false;
    let mut is_restrict = false;
    let mut is_volatile = false;
    let mut qualifier = |node: Node| match &text[node.byte_range()] {
        "const" => is_const = true,
        "volatile" => is_volatile = true,
        "__restrict__" | "__restrict" | "restrict" => is_restrict = true,
        _ => {}
    };
    let mut cursor = decl.walk();
    for child in decl.children(&mut cursor) {
        if child.kind() == "type_qualifier" {
            qualifier(child);
        }
    }
    let base_type = decl
        .child_by_field_name("type")
        .map(|t| collapse(&text[t.byte_range()]))
        .unwrap_or_default();

    let mut pointer_depth = 0u8;
    let mut array_dims = Vec::new();
    let mut name_node = None;
    let mut node = decl.child_by_field_name("declarator");
    while let Some(current) = node {
        match current.kind() {
            "pointer_declarator" | "abstract_pointer_declarator" => {
                pointer_depth = pointer_depth.saturating_add(1);
                let mut c = current.walk();
                for child in current.children(&mut c) {
                    if child.kind() == "type_qualifier" {
                        qualifier(child);
                    }
                }
            }
            "array_declarator" | "abstract_array_declarator" => {
                array_dims.push(
                    current
                        .child_by_field_name("size")
                        .map(|s| collapse(prepared.original_text(s.start_byte(), s.end_byte())))
                        .unwrap_or_default(),
                );
            }
            "identifier" => {
                name_node = Some(current);
                break;
            }
            _ => {}
        }
        node = current.child_by_field_name("declarator");
    }
    // declarators nest outside-in, so `a[2][3]` yields [3, 2]; report as written
    array_dims.reverse();

    // the type as written: the declaration's original text without the name (and without a default value)
    let end = decl
        .child_by_field_name("default_value")
        .and_then(|v| v.prev_sibling())
        .map_or(decl.end_byte(), |eq| eq.start_byte());
    let type_text = match name_node {
        Some(n) => format!(
            "{} {}",
            prepared.original_text(decl.start_byte(), n.start_byte()),
            prepared.original_text(n.end_byte(), end)
        ),
        None => prepared.original_text(decl.start_byte(), end).to_string(),
    };
    KernelParam {
        name: name_node
            .map(|n| text[n.byte_range()].to_string())
            .unwrap_or_default(),
        type_text: collapse(&type_text),
        base_type,
        pointer_depth,
        is_const,
        is_restrict,
        array_dims,
        is_volatile,
        ..KernelParam::default()
    }
}
