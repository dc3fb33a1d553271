//! A kernel's own compilation unit: the kernel and, transitively, the `__device__` functions, types,
//! templates, macros, constants and `#include`s it uses — in source order, from the file and the user
//! headers it includes — and nothing of the host program (`main`, host functions, launches, error-check
//! macros only host code uses). This is what kt compiles, tunes and delivers; the user's file is never
//! changed (splice.rs puts a new kernel back into a copy of it).

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::error::CudaError;
use crate::includes::SourceFile;
use crate::parse::parse_source_file;
use crate::unit_items::{self, Item, ItemKind, Items};

/// One item of a unit (or one left out of it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UnitItem {
    pub kind: ItemKind,
    /// The name it defines (the header for an include; empty for items without a name).
    pub name: String,
    /// The file it comes from (the main file or a followed header).
    pub origin_file: String,
    /// Its first line in that file.
    pub line: usize,
}

/// The compilation unit of one kernel.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelUnit {
    pub kernel: String,
    /// Device-only source: compile this.
    pub text: String,
    /// What `text` holds, in order.
    pub items: Vec<UnitItem>,
    /// Items of the file left out: host code, other kernels, unused helpers and headers.
    pub dropped_host_items: Vec<UnitItem>,
    /// `#include "…"` directives whose header was not found (they are left out of the unit).
    pub missing_includes: Vec<String>,
}

/// The unit of `kernel_name` in `file` (with its followed headers). Errors when the file has no such kernel
/// (the message lists the kernels there and the includes followed) or when the extracted text does not
/// parse back to the kernel.
pub fn extract_unit(file: &SourceFile, kernel_name: &str) -> Result<KernelUnit, CudaError> {
    let parsed = parse_source_file(file)?;
    parsed.select_kernel_in(Some(kernel_name), &file.name)?;
    let (prepared, tree) = crate::grammar_parse::prepared_tree(&file.combined)?;
    let all = unit_items::collect(&prepared, tree.root_node());
    let keep = kept_items(&all, kernel_name);
    let text = with_type_headers(unit_text(&prepared.original, &all, &keep), &all, &keep);
    let describe = |item: &Item| {
        let location = prepared.location_of_original(item.start);
        let (origin, at) = file.relocate(location);
        UnitItem {
            kind: item.kind,
            name: item
                .names
                .first()
                .cloned()
                .or_else(|| item.header.as_ref().map(|h| h.0.clone()))
                .unwrap_or_default(),
            origin_file: origin.to_string(),
            line: at.line,
        }
    };
    let mut items = Vec::new();
    let mut dropped = Vec::new();
    for (i, item) in all.items.iter().enumerate() {
        if keep.contains(&i) {
            items.push(describe(item));
        } else if !matches!(item.kind, ItemKind::Other) || !item.names.is_empty() {
            dropped.push(describe(item));
        }
    }
    let missing_includes = file
        .includes
        .iter()
        .filter(|i| !i.system && i.resolved.is_none())
        .map(|i| i.header.clone())
        .collect();
    check_unit(&file.name, kernel_name, &text)?;
    tracing::debug!(
        kernel = kernel_name,
        items = items.len(),
        dropped = dropped.len(),
        "extracted the kernel's unit"
    );
    Ok(KernelUnit {
        kernel: kernel_name.to_string(),
        text,
        items,
        dropped_host_items: dropped,
        missing_includes,
    })
}

/// The half-precision types reach a program through headers a unit leaves out (`cublas_v2.h` brings
/// `__nv_bfloat16`): a unit that names them without their header gets it first.
fn with_type_headers(text: String, all: &Items, keep: &BTreeSet<usize>) -> String {
    const TYPE_HEADERS: &[(&str, &[&str])] = &[
        (
            "cuda_bf16.h",
            &[
                "__nv_bfloat16",
                "nv_bfloat16",
                "__nv_bfloat162",
                "nv_bfloat162",
            ],
        ),
        ("cuda_fp16.h", &["__half", "half", "__half2", "half2"]),
    ];
    let mut prefix = String::new();
    for (header, types) in TYPE_HEADERS {
        let named = keep
            .iter()
            .any(|&i| types.iter().any(|t| all.items[i].uses.contains(*t)));
        if named && !text.contains(header) {
            prefix.push_str(&format!("#include <{header}>\n"));
        }
    }
    prefix + &text
}

/// The unit must parse back to the kernel: a check that nothing it needs was cut off in the middle.
fn check_unit(file: &str, kernel: &str, text: &str) -> Result<(), CudaError> {
    let what = format!("the unit of `{kernel}` extracted from {file}");
    let parsed = crate::parse::parse_named(text, &what).map_err(|e| CudaError::Unit {
        what: file.to_string(),
        kernel: kernel.to_string(),
        reason: e.to_string(),
    })?;
    parsed.select_kernel_in(Some(kernel), &what)?;
    Ok(())
}

/// Indices of the items the kernel needs: the kernel's definitions, then whatever they use, transitively;
/// device-usable includes and `using` directives always.
pub(crate) fn kept_items(all: &Items, kernel: &str) -> BTreeSet<usize> {
    let mut defined: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, item) in all.items.iter().enumerate() {
        if !usable_in_device_code(item.kind) {
            continue;
        }
        for name in &item.names {
            defined.entry(name.as_str()).or_default().push(i);
        }
    }
    let mut keep = BTreeSet::new();
    let mut queue: VecDeque<usize> = all
        .items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.kind == ItemKind::Kernel && it.names.iter().any(|n| n == kernel))
        .map(|(i, _)| i)
        .collect();
    for (i, item) in all.items.iter().enumerate() {
        let always = match item.kind {
            ItemKind::Include => item
                .header
                .as_ref()
                .is_some_and(|(h, system)| *system && unit_items::device_usable_header(h)),
            ItemKind::Using => item.names.is_empty() && !item_text_mentions_std(item),
            // `a + b` names no identifier: overloaded operators come whenever they are device code
            ItemKind::DeviceFunction => item.names.iter().any(|n| n.starts_with("operator")),
            _ => false,
        };
        if always {
            queue.push_back(i);
        }
    }
    let mut wrapper_followed = vec![false; all.wrappers.len()];
    loop {
        while let Some(i) = queue.pop_front() {
            if !keep.insert(i) {
                continue;
            }
            for word in &all.items[i].uses {
                for &j in defined.get(word.as_str()).into_iter().flatten() {
                    if !keep.contains(&j) {
                        queue.push_back(j);
                    }
                }
            }
        }
        // a kept `#if` block keeps the macros its conditions test (`#define STANDARD_DATASET` for
        // `#ifdef STANDARD_DATASET`), which may in turn bring more items inside other blocks
        for (w, wrapper) in all.wrappers.iter().enumerate() {
            if wrapper_followed[w] || !wraps_a_kept_item(all, &keep, wrapper) {
                continue;
            }
            wrapper_followed[w] = true;
            for word in &wrapper.uses {
                for &j in defined.get(word.as_str()).into_iter().flatten() {
                    if !keep.contains(&j) && all.items[j].kind == ItemKind::Macro {
                        queue.push_back(j);
                    }
                }
            }
        }
        if queue.is_empty() {
            return keep;
        }
    }
}

fn wraps_a_kept_item(all: &Items, keep: &BTreeSet<usize>, wrapper: &unit_items::Wrapper) -> bool {
    keep.iter()
        .any(|&i| all.items[i].start >= wrapper.start && all.items[i].end <= wrapper.end)
}

fn item_text_mentions_std(item: &Item) -> bool {
    item.uses.contains("std")
}

fn usable_in_device_code(kind: ItemKind) -> bool {
    matches!(
        kind,
        ItemKind::DeviceFunction
            | ItemKind::DevicePrototype
            | ItemKind::Type
            | ItemKind::Macro
            | ItemKind::Constant
            | ItemKind::DeviceVariable
            | ItemKind::Using
    )
}

/// The kept items and the wrapper lines around them, in source order.
pub(crate) fn unit_text(original: &str, all: &Items, keep: &BTreeSet<usize>) -> String {
    let mut pieces: Vec<(usize, usize, bool)> = keep
        .iter()
        .map(|&i| (all.items[i].start, all.items[i].end, true))
        .collect();
    for w in &all.wrappers {
        if wraps_a_kept_item(all, keep, w) {
            pieces.extend(w.parts.iter().map(|&(s, e)| (s, e, false)));
        }
    }
    pieces.sort_by_key(|p| p.0);
    let mut out = String::new();
    let mut previous_was_item = false;
    for (start, end, is_item) in pieces {
        let piece = original[start..end].trim_end();
        // a blank line between items, none around wrapper lines
        if is_item && previous_was_item && !piece.starts_with('#') {
            out.push('\n');
        }
        out.push_str(piece);
        out.push('\n');
        previous_was_item = is_item;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(src: &str, kernel: &str) -> KernelUnit {
        extract_unit(&SourceFile::from_text("prog.cu", src, &[]), kernel).unwrap()
    }

    const PROGRAM: &str = r#"#include <stdio.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define CUDA_CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); exit(1); } } while (0)
#define SQUARE(x) ((x) * (x))
#define UNUSED_MACRO 7

struct __align__(8) Pair { float a; int b; };
typedef float real;
__constant__ float scale[4];
const int N = 1024;
int host_counter = 0;

__device__ real sq(real v) { return SQUARE(v) * scale[0]; }
__device__ float unused_helper(float v) { return v; }

__global__ void pairs(const Pair *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i < N) out[i] = sq(in[i].a) + in[i].b;
}

__global__ void other(float *x) { x[0] = unused_helper(1.0f); }

void launch(const Pair *in, float *out, int n) {
    pairs<<<(n + 255) / 256, 256>>>(in, out, n);
    CUDA_CHECK(cudaGetLastError());
}

int main() {
    float *out;
    CUDA_CHECK(cudaMalloc(&out, N * sizeof(float)));
    host_counter++;
    return 0;
}
"#;

    #[test]
    fn a_whole_program_gives_a_device_only_unit_in_source_order() {
        let u = unit(PROGRAM, "pairs");
        let expected = "#include <cuda_fp16.h>\n#define SQUARE(x) ((x) * (x))\n\nstruct __align__(8) Pair { float a; int b; };\n\ntypedef float real;\n\n__constant__ float scale[4];\n\nconst int N = 1024;\n\n__device__ real sq(real v) { return SQUARE(v) * scale[0]; }\n\n__global__ void pairs(const Pair *in, float *out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n && i < N) out[i] = sq(in[i].a) + in[i].b;\n}\n";
        assert_eq!(u.text, expected);
        let kinds: Vec<(ItemKind, &str)> =
            u.items.iter().map(|i| (i.kind, i.name.as_str())).collect();
        assert_eq!(
            kinds,
            vec![
                (ItemKind::Include, "cuda_fp16.h"),
                (ItemKind::Macro, "SQUARE"),
                (ItemKind::Type, "Pair"),
                (ItemKind::Type, "real"),
                (ItemKind::DeviceVariable, "scale"),
                (ItemKind::Constant, "N"),
                (ItemKind::DeviceFunction, "sq"),
                (ItemKind::Kernel, "pairs"),
            ]
        );
        let dropped: Vec<&str> = u
            .dropped_host_items
            .iter()
            .map(|i| i.name.as_str())
            .collect();
        for name in [
            "main",
            "launch",
            "CUDA_CHECK",
            "host_counter",
            "other",
            "unused_helper",
            "stdio.h",
            "UNUSED_MACRO",
        ] {
            assert!(dropped.contains(&name), "{name} not dropped: {dropped:?}");
        }
        assert_eq!(u.items[7].line, 18);
        assert_eq!(u.items[7].origin_file, "prog.cu");
    }

    #[test]
    fn namespaces_templates_and_conditionals_come_with_their_wrappers() {
        let src = "#ifndef GUARD\n#define GUARD\nnamespace ops {\ntemplate <typename T> __device__ T twice(T v) { return 2 * v; }\nvoid host_only() {}\n#if USE_FAST\n__global__ void k(float *a) { a[0] = twice(a[0]); }\n#else\n__global__ void k(float *a) { a[0] = twice(a[0]) + 0.0f; }\n#endif\n}\n#endif\nint main() { return 0; }\n";
        let u = unit(src, "k");
        assert_eq!(
            u.text,
            "#ifndef GUARD\n#define GUARD\nnamespace ops {\ntemplate <typename T> __device__ T twice(T v) { return 2 * v; }\n#if USE_FAST\n__global__ void k(float *a) { a[0] = twice(a[0]); }\n#else\n__global__ void k(float *a) { a[0] = twice(a[0]) + 0.0f; }\n#endif\n}\n#endif\n"
        );
    }

    #[test]
    fn macros_tested_by_a_kept_conditional_come_along() {
        // PolyBench's shape: the sizes live in an `#ifdef` on a macro that only the condition names
        let src = "#define STANDARD_DATASET\n#define UNUSED 1\n#define FAST\n#define LEVEL 3\n#ifdef STANDARD_DATASET\n#define NY 4096\n#endif\n#if defined(FAST) && LEVEL > 2\n__device__ int twice(int v) { return 2 * v; }\n#endif\n__global__ void k(float *a) { a[NY - 1] = twice(1); }\nint main() { return 0; }\n";
        let u = unit(src, "k");
        assert_eq!(
            u.text,
            "#define STANDARD_DATASET\n#define FAST\n#define LEVEL 3\n#ifdef STANDARD_DATASET\n#define NY 4096\n#endif\n#if defined(FAST) && LEVEL > 2\n__device__ int twice(int v) { return 2 * v; }\n#endif\n__global__ void k(float *a) { a[NY - 1] = twice(1); }\n"
        );
    }

    #[test]
    fn a_unit_naming_bfloat16_without_its_header_gets_it() {
        let src = "#include <cublas_v2.h>\ntypedef __nv_bfloat16 floatX;\n__global__ void k(floatX *a) { a[0] = a[1]; }\n";
        let u = unit(src, "k");
        assert!(
            u.text
                .starts_with("#include <cuda_bf16.h>\ntypedef __nv_bfloat16 floatX;"),
            "{}",
            u.text
        );
        assert!(!unit(PROGRAM, "pairs").text.contains("cuda_bf16.h"));
    }

    #[test]
    fn a_missing_kernel_names_the_file_and_the_kernels_there() {
        let err =
            extract_unit(&SourceFile::from_text("prog.cu", PROGRAM, &[]), "nope").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("no kernel named `nope` in prog.cu"), "{msg}");
        assert!(msg.contains("pairs, other"), "{msg}");
    }
}
