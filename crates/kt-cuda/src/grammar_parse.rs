//! The source as the grammar reads it: prepared (preprocess.rs) and parsed, and where conditionals inside
//! statements made the grammar reject part of it, parsed once more with one branch of each `#if` group
//! (conditional_branches.rs). Every reader of the whole file's tree (the analysis, the unit, the splice)
//! starts here, so all of them see the same parse.

use tree_sitter::{Node, Tree};

use crate::diagnostics::error_extent;
use crate::error::CudaError;
use crate::preprocess::Prepared;
use crate::scope::syntax_tree;

/// `source` prepared and parsed; where the grammar rejects part of it and the file has conditional
/// directives, the second try with one branch per group is taken when the grammar rejects less of it and it
/// reads no fewer functions (a kernel defined once per branch of an `#if` is two functions to the first parse).
pub(crate) fn prepared_tree(source: &str) -> Result<(Prepared, Tree), CudaError> {
    let prepared = Prepared::new(source);
    let tree = syntax_tree(&prepared.text)?;
    if !tree.root_node().has_error() || !source.contains("#if") {
        return Ok((prepared, tree));
    }
    let rejected = |tree: &Tree| {
        let mut bytes = 0;
        error_extent(tree.root_node(), &mut bytes);
        bytes
    };
    let second = Prepared::with_one_branch_per_conditional(source);
    let second_tree = syntax_tree(&second.text)?;
    if rejected(&second_tree) < rejected(&tree)
        && functions(second_tree.root_node()) >= functions(tree.root_node())
    {
        tracing::debug!("parsed with one branch of each #if group: the grammar rejects less of it");
        return Ok((second, second_tree));
    }
    Ok((prepared, tree))
}

/// Function definitions the grammar read (outside ERROR nodes), counted without recursion.
fn functions(root: Node) -> usize {
    let mut count = 0;
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() {
            continue;
        }
        if node.kind() == "function_definition" {
            count += 1;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    count
}
