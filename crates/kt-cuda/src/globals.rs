//! Mutable globals a kernel writes: file-scope `__device__` and `__managed__` variables (not `const`, not
//! `__constant__`) that the kernel or a helper it calls assigns, increments, or hands by address to a
//! function (`atomicAdd(&count, 1)`). Such a variable outlives a launch: a kernel can count its launches
//! and change what it does after the first few (correct while verified, idle while timed), or carry a
//! result from one test into the next. A verifier that knows them can reset them between tests.
//! Also counted: a function-local `static` in the kernel or a helper (device memory for the module's
//! lifetime, like a `__device__` variable), and an array global whose address is taken into a pointer
//! (`float *m = memo;`), after which writes go through the alias.

use std::collections::BTreeMap;

use tree_sitter::Node;

use crate::kernel::MutableGlobal;
use crate::preprocess::Prepared;
use crate::scope::{FileScope, has_specifier};
use crate::signature;

/// What `collect_globals` knows of a global.
struct Global {
    space: &'static str,
    /// Declared as an array: its name alone, passed to a function, is its address.
    is_array: bool,
}

/// The mutable device globals the kernel at `definition` (or one of its `helpers`) writes, by name.
pub(crate) fn written_by(
    prepared: &Prepared,
    file: &FileScope,
    definition: Node,
    helpers: &[String],
) -> Vec<MutableGlobal> {
    let mut root = definition;
    while let Some(p) = root.parent() {
        root = p;
    }
    let mut globals = BTreeMap::new();
    collect_globals(&prepared.text, root, &mut globals);
    let mut found: BTreeMap<String, MutableGlobal> = BTreeMap::new();
    let bodies = std::iter::once(definition).chain(
        helpers
            .iter()
            .filter_map(|h| file.device_by_name.get(h).copied()),
    );
    for body in bodies {
        find_writes(prepared, body, &globals, &mut found);
    }
    found.into_values().collect()
}

/// File-scope `__device__`/`__managed__` variables that may change: name → memory space.
fn collect_globals(text: &str, node: Node, out: &mut BTreeMap<String, Global>) {
    match node.kind() {
        "declaration" => {
            let space = ["__managed__", "__device__"].into_iter().find(|s| {
                has_specifier(node, text, s) || has_word_before_declarator(node, text, s)
            });
            let fixed = ["__constant__", "const", "constexpr"]
                .iter()
                .any(|s| has_specifier(node, text, s) || has_word_before_declarator(node, text, s));
            let (Some(space), false) = (space, fixed) else {
                return;
            };
            let mut cursor = node.walk();
            for d in node.children_by_field_name("declarator", &mut cursor) {
                if signature::function_declarator_of(d).is_some() {
                    continue; // a prototype
                }
                if let Some(name) = signature::declared_name(d, text) {
                    let is_array = declares_array(d);
                    out.entry(name).or_insert(Global { space, is_array });
                }
            }
        }
        "function_definition" => {}
        _ => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                collect_globals(text, child, out);
            }
        }
    }
}

/// Whether a declarator (possibly with an initializer) declares an array.
fn declares_array(declarator: Node) -> bool {
    let mut node = declarator;
    loop {
        if node.kind() == "array_declarator" {
            return true;
        }
        match node.child_by_field_name("declarator") {
            Some(d) => node = d,
            None => return false,
        }
    }
}

/// Whether `word` is written among a declaration's tokens before its first declarator (qualifiers the
/// grammar files under other node kinds).
pub(crate) fn has_word_before_declarator(node: Node, text: &str, word: &str) -> bool {
    let end = node
        .child_by_field_name("declarator")
        .map_or(node.end_byte(), |d| d.start_byte());
    text[node.start_byte()..end]
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == word)
}

/// The variable an lvalue expression stores into: `count`, `buf[i]`, `s.x`, `*(&count)`, `(count)`.
fn stored_variable<'a>(node: Node, text: &'a str) -> Option<&'a str> {
    match node.kind() {
        "identifier" => Some(&text[node.byte_range()]),
        "subscript_expression" | "field_expression" => {
            stored_variable(node.child_by_field_name("argument")?, text)
        }
        "parenthesized_expression" => stored_variable(node.named_child(0)?, text),
        "pointer_expression" => stored_variable(node.child_by_field_name("argument")?, text),
        _ => None,
    }
}

fn find_writes(
    prepared: &Prepared,
    node: Node,
    globals: &BTreeMap<String, Global>,
    found: &mut BTreeMap<String, MutableGlobal>,
) {
    let text = &prepared.text;
    let target = match node.kind() {
        "assignment_expression" => node.child_by_field_name("left"),
        "update_expression" => node.child_by_field_name("argument"),
        // an address handed on (atomics, a helper that writes through it)
        "pointer_expression"
            if node
                .child(0)
                .is_some_and(|op| &text[op.byte_range()] == "&") =>
        {
            node.child_by_field_name("argument")
        }
        _ => None,
    };
    let mut record_as = |name: &str, space: &str, at: usize| {
        found
            .entry(name.to_string())
            .or_insert_with(|| MutableGlobal {
                name: name.to_string(),
                space: space.to_string(),
                written_at: prepared.location(at),
            });
    };
    let mut record = |name: &str, at: usize| {
        if let Some(g) = globals.get(name) {
            record_as(name, g.space, at);
        }
    };
    if let Some(name) = target.and_then(|t| stored_variable(t, text)) {
        record(name, node.start_byte());
    }
    // an array global named without a subscript is its address: handed to a function, kept in a
    // pointer, offset; writes may then go through the alias
    if node.kind() == "identifier" {
        let name = &text[node.byte_range()];
        let subscripted = node.parent().is_some_and(|p| {
            p.kind() == "subscript_expression"
                && p.child_by_field_name("argument").map(|a| a.id()) == Some(node.id())
        });
        if !subscripted && globals.get(name).is_some_and(|g| g.is_array) {
            record(name, node.start_byte());
        }
    }
    if node.kind() == "declaration"
        && has_specifier(node, text, "static")
        && !["const", "constexpr", "__constant__", "__shared__"]
            .iter()
            .any(|s| has_specifier(node, text, s) || has_word_before_declarator(node, text, s))
    {
        let mut cursor = node.walk();
        for d in node.children_by_field_name("declarator", &mut cursor) {
            if let Some(name) = signature::declared_name(d, text) {
                record_as(&name, "static", node.start_byte());
            }
        }
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        find_writes(prepared, child, globals, found);
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse;

    fn globals(src: &str) -> Vec<(String, String)> {
        let parsed = parse(src).unwrap();
        parsed.kernels[0]
            .mutable_globals
            .iter()
            .map(|g| (g.name.clone(), g.space.clone()))
            .collect()
    }

    #[test]
    fn a_launch_counter_is_a_mutable_global_the_kernel_writes() {
        let src = r#"
__device__ int calls = 0;
__constant__ float scale[4];
__device__ const int limit = 3;
extern "C" __global__ void k(float *c, const float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) atomicAdd(&calls, 1);
    if (calls > limit) return;
    if (i < n) c[i] = a[i] * scale[0];
}
"#;
        assert_eq!(
            globals(src),
            [("calls".to_string(), "__device__".to_string())]
        );
    }

    #[test]
    fn writes_in_a_helper_count_and_reads_alone_do_not() {
        let src = r#"
__device__ float cache[1024];
__managed__ int seen;
__device__ int only_read = 7;
__device__ void remember(float v, int i) { cache[i] = v; seen++; }
__global__ void k(float *c, int n) {
    int i = threadIdx.x;
    if (i < n) { c[i] = cache[i] + only_read; remember(c[i], i); }
}
"#;
        assert_eq!(
            globals(src),
            [
                ("cache".to_string(), "__device__".to_string()),
                ("seen".to_string(), "__managed__".to_string())
            ]
        );
    }

    #[test]
    fn a_local_static_and_an_array_global_kept_in_a_pointer_are_state() {
        let src = r#"
__device__ float memo[256];
__device__ float table[4];
__global__ void k(float *c, int n) {
    static unsigned int launches = 0;
    static const int limit = 3;
    static __shared__ float tile[32];
    float *m = memo;
    if (threadIdx.x == 0) launches += 1;
    m[threadIdx.x] = c[threadIdx.x] + table[0];
}
"#;
        assert_eq!(
            globals(src),
            [
                ("launches".to_string(), "static".to_string()),
                ("memo".to_string(), "__device__".to_string())
            ]
        );
    }

    #[test]
    fn a_kernel_without_globals_lists_none() {
        let src = "__global__ void k(float *c) { c[threadIdx.x] = 1.0f; }";
        assert!(globals(src).is_empty());
    }
}
