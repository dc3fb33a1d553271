//! `__constant__` symbols: file-scope variables in constant memory. A kernel reads one like an input that no
//! argument carries (Kernel Tuner's `cmem_args`, a convolution's filter), so kt lists each with its element
//! type and array length, and which of them each kernel (or a helper it calls) reads: `kt inspect` shows
//! them, a sidecar is checked to describe every one read, and the tuner fills them in the loaded module
//! before launching.
//!
//! It does not decide how many elements a symbol holds when its length needs a macro the configuration may
//! change (a tunable `#ifndef` default): the length is then unknown here and the tuner takes the size the
//! loaded module reports.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::Node;

use crate::globals::has_word_before_declarator;
use crate::host_expr::{eval_int, macro_lookup};
use crate::layout;
use crate::preprocess::Prepared;
use crate::scope::{FileScope, collapse, has_specifier};
use crate::signature;

pub use crate::constant_symbol::ConstantSymbol;

/// Every file-scope `__constant__` variable under `root`, in source order (a name declared twice, as in an
/// `extern` declaration and its definition, once).
pub(crate) fn collect(prepared: &Prepared, scope: &FileScope, root: Node) -> Vec<ConstantSymbol> {
    // only macros with a fixed value count: a `#ifndef` default is a parameter the configuration may change
    let fixed_macros: HashMap<String, String> = prepared
        .defines
        .iter()
        .filter(|d| !d.function_like && !d.overridable)
        .map(|d| (d.name.clone(), d.body.clone()))
        .collect();
    let mut out = Vec::new();
    visit(prepared, scope, &fixed_macros, root, &mut out);
    out
}

fn visit(
    prepared: &Prepared,
    scope: &FileScope,
    macros: &HashMap<String, String>,
    node: Node,
    out: &mut Vec<ConstantSymbol>,
) {
    let text = &prepared.text;
    match node.kind() {
        "declaration"
            if has_specifier(node, text, "__constant__")
                || has_word_before_declarator(node, text, "__constant__") =>
        {
            let base = node
                .child_by_field_name("type")
                .map(|t| collapse(&text[t.byte_range()]))
                .unwrap_or_default();
            let mut cursor = node.walk();
            for d in node.children_by_field_name("declarator", &mut cursor) {
                if signature::function_declarator_of(d).is_some() {
                    continue;
                }
                let Some(name) = signature::declared_name(d, text) else {
                    continue;
                };
                if out.iter().any(|s: &ConstantSymbol| s.name == name) {
                    continue;
                }
                out.push(symbol(prepared, scope, macros, &base, name, d));
            }
        }
        "function_definition" => {}
        _ => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                visit(prepared, scope, macros, child, out);
            }
        }
    }
}

fn symbol(
    prepared: &Prepared,
    scope: &FileScope,
    macros: &HashMap<String, String>,
    base: &str,
    name: String,
    declarator: Node,
) -> ConstantSymbol {
    let (mut dims, mut pointer) = (Vec::new(), false);
    let mut node = Some(declarator);
    while let Some(current) = node {
        match current.kind() {
            "array_declarator" => dims.push(
                current
                    .child_by_field_name("size")
                    .map(|s| collapse(prepared.original_text(s.start_byte(), s.end_byte())))
                    .unwrap_or_default(),
            ),
            "pointer_declarator" => pointer = true,
            _ => {}
        }
        node = current.child_by_field_name("declarator");
    }
    // declarators nest outside-in: `a[2][3]` is met as [3], then [2]
    dims.reverse();
    let lookup = macro_lookup(macros);
    let length = dims.iter().try_fold(1u64, |n, d| {
        let v = u64::try_from(eval_int(d, &lookup)?).ok()?;
        n.checked_mul(v)
    });
    let resolved = layout::resolve_type(&scope.typedefs, base);
    ConstantSymbol {
        name,
        element_type: if pointer {
            format!("{resolved} *")
        } else {
            resolved.clone()
        },
        dtype: (!pointer).then(|| layout::dtype_of(&resolved)).flatten(),
        dims,
        length,
        location: prepared.location(declarator.start_byte()),
    }
}

/// The symbols of `all` that the kernel at `definition` or one of its `helpers` names.
pub(crate) fn read_by(
    prepared: &Prepared,
    scope: &FileScope,
    definition: Node,
    helpers: &[String],
    all: &[ConstantSymbol],
) -> Vec<ConstantSymbol> {
    if all.is_empty() {
        return Vec::new();
    }
    let mut words = BTreeSet::new();
    let bodies = std::iter::once(definition).chain(
        helpers
            .iter()
            .filter_map(|h| scope.device_by_name.get(h).copied()),
    );
    for body in bodies {
        identifiers(&prepared.text, body, &mut words);
    }
    all.iter()
        .filter(|s| words.contains(s.name.as_str()))
        .cloned()
        .collect()
}

fn identifiers<'a>(text: &'a str, node: Node, out: &mut BTreeSet<&'a str>) {
    if node.kind() == "identifier" {
        out.insert(&text[node.byte_range()]);
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        identifiers(text, child, out);
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse;

    const CONVOLUTION: &str = r#"
#define FILTER_H 5
#define FILTER_W (FILTER_H + 2)
#ifndef taps
#define taps 9
#endif
typedef float real;
__constant__ real d_filter[FILTER_H * FILTER_W];
__constant__ float bias;
__constant__ int lut[taps];
__constant__ float unused[4][8];
__device__ float tap(int i) { return d_filter[i]; }
extern "C" __global__ void conv(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = bias;
    for (int k = 0; k < FILTER_H * FILTER_W; k++) sum += in[i + k] * tap(k) * lut[k % taps];
    if (i < n) out[i] = sum;
}
"#;

    #[test]
    fn constant_symbols_are_listed_with_type_and_length() {
        let parsed = parse(CONVOLUTION).unwrap();
        let listed: Vec<(String, String, Option<String>, Option<u64>)> = parsed
            .constant_symbols
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.element_type.clone(),
                    s.dtype.clone(),
                    s.length,
                )
            })
            .collect();
        let f32 = || Some("float32".to_string());
        assert_eq!(
            listed,
            [
                ("d_filter".into(), "float".into(), f32(), Some(35)),
                ("bias".into(), "float".into(), f32(), Some(1)),
                // a tunable macro: the length is the compiled module's
                ("lut".into(), "int".into(), Some("int32".into()), None),
                ("unused".into(), "float".into(), f32(), Some(32)),
            ]
        );
        assert_eq!(parsed.constant_symbols[0].dims, ["FILTER_H * FILTER_W"]);
        assert_eq!(parsed.constant_symbols[3].dims, ["4", "8"]);
        assert_eq!(parsed.constant_symbols[0].location.line, 8);
    }

    #[test]
    fn a_kernel_reads_the_constants_it_or_its_helpers_name() {
        let parsed = parse(CONVOLUTION).unwrap();
        let read: Vec<&str> = parsed.kernels[0]
            .constant_memory
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(read, ["d_filter", "bias", "lut"]);
        assert_eq!(
            parsed.constant_symbols[2].to_string(),
            "__constant__ int lut[taps] (length known when compiled)"
        );
    }

    #[test]
    fn a_file_without_constant_memory_lists_none() {
        let parsed =
            parse("__device__ int calls; __global__ void k(float *c) { c[0] = calls; }").unwrap();
        assert!(parsed.constant_symbols.is_empty() && parsed.kernels[0].constant_memory.is_empty());
    }
}
