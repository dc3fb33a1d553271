//! Putting a new kernel back into a copy of the user's whole program: the kernel's definition is replaced by
//! the new unit's, items of the new unit that also exist in the program (a helper, a struct, a macro) replace
//! them where they differ, and items the program does not have are inserted before the kernel (new includes
//! before the program's first item). Host code — `main`, launches, error checks — stays as it was.

use std::collections::HashMap;

use crate::error::CudaError;
use crate::includes::SourceFile;
use crate::preprocess::Prepared;
use crate::unit_items::{self, Item, ItemKind, Items};

fn items_of(text: &str) -> Result<(Prepared, Items), CudaError> {
    let (prepared, tree) = crate::grammar_parse::prepared_tree(text)?;
    let items = unit_items::collect(&prepared, tree.root_node());
    Ok((prepared, items))
}

fn normalized(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A key two versions of one item share: its kind group and first name (or header).
fn key(item: &Item) -> Option<(bool, String)> {
    let name = item
        .names
        .first()
        .cloned()
        .or_else(|| item.header.as_ref().map(|h| h.0.clone()))?;
    Some((item.kind == ItemKind::Include, name))
}

/// `original_text` (a whole program) with `kernel_name` and the items of `new_unit_text` put in.
pub fn splice_kernel_into_program(
    original_text: &str,
    kernel_name: &str,
    new_unit_text: &str,
) -> Result<String, CudaError> {
    splice(
        original_text,
        &[],
        kernel_name,
        new_unit_text,
        "the program",
    )
}

/// [`splice_kernel_into_program`] for a file with user headers: items the new unit has unchanged from a
/// header (they were inlined into the unit) are not copied into the program, which still includes them.
pub fn splice_kernel_into_file(
    file: &SourceFile,
    kernel_name: &str,
    new_unit_text: &str,
) -> Result<String, CudaError> {
    let (_, combined) = items_of(&file.combined)?;
    let known: Vec<String> = combined
        .items
        .iter()
        .map(|i| normalized(&file.combined[i.start..i.end]))
        .collect();
    splice(&file.text, &known, kernel_name, new_unit_text, &file.name)
}

fn splice(
    original_text: &str,
    known_elsewhere: &[String],
    kernel_name: &str,
    new_unit_text: &str,
    what: &str,
) -> Result<String, CudaError> {
    let unit_error = |reason: String| CudaError::Unit {
        what: what.to_string(),
        kernel: kernel_name.to_string(),
        reason,
    };
    let (_, old) = items_of(original_text)?;
    let (_, new) = items_of(new_unit_text)?;
    let is_kernel =
        |i: &Item| i.kind == ItemKind::Kernel && i.names.iter().any(|n| n == kernel_name);
    let Some(kernel_at) = old.items.iter().find(|i| is_kernel(i)).map(|i| i.start) else {
        return Err(unit_error(format!(
            "the program has no definition of `{kernel_name}` to replace"
        )));
    };
    if !new.items.iter().any(is_kernel) {
        return Err(unit_error(format!(
            "the new unit has no definition of `{kernel_name}`"
        )));
    }
    let first_at = old.items.first().map_or(0, |i| i.start);
    // old items by key, in order, so overloads pair up in order
    let mut old_by_key: HashMap<(bool, String), Vec<&Item>> = HashMap::new();
    for item in &old.items {
        if let Some(k) = key(item) {
            old_by_key.entry(k).or_default().push(item);
        }
    }
    let mut replacements: Vec<(usize, usize, String)> = Vec::new();
    let mut insert_includes = String::new();
    let mut insert_before_kernel = String::new();
    for item in &new.items {
        let new_text = new_unit_text[item.start..item.end].trim_end();
        let Some(k) = key(item) else {
            continue;
        };
        let matched = old_by_key.get_mut(&k).and_then(|v| {
            if v.is_empty() {
                None
            } else {
                Some(v.remove(0))
            }
        });
        match matched {
            Some(old_item) => {
                if normalized(&original_text[old_item.start..old_item.end]) != normalized(new_text)
                {
                    replacements.push((old_item.start, old_item.end, new_text.to_string()));
                }
            }
            None if known_elsewhere.contains(&normalized(new_text)) => {}
            None if item.kind == ItemKind::Include => {
                insert_includes.push_str(new_text);
                insert_includes.push('\n');
            }
            None => {
                insert_before_kernel.push_str(new_text);
                insert_before_kernel.push_str("\n\n");
            }
        }
    }
    if !insert_includes.is_empty() {
        replacements.push((first_at, first_at, insert_includes));
    }
    if !insert_before_kernel.is_empty() {
        replacements.push((kernel_at, kernel_at, insert_before_kernel));
    }
    // from the end, so earlier offsets stay valid; an insertion at an item's start goes before it
    replacements.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let mut out = original_text.to_string();
    for (start, end, text) in replacements {
        out.replace_range(start..end, &text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = "#include <stdio.h>\n#define N 64\n__device__ float f(float v) { return v; }\n__global__ void k(float *a) { a[threadIdx.x] = f(a[threadIdx.x]); }\nint main() { float *a; k<<<1, N>>>(a); printf(\"done\\n\"); return 0; }\n";

    #[test]
    fn the_new_kernel_and_its_changed_helper_replace_the_old_and_host_code_stays() {
        let unit = "#define N 64\n__device__ float f(float v) { return 2 * v; }\n__device__ float g(float v) { return v + 1; }\n__global__ void k(float *a) { a[threadIdx.x] = g(f(a[threadIdx.x])); }\n";
        let out = splice_kernel_into_program(PROGRAM, "k", unit).unwrap();
        assert_eq!(
            out,
            "#include <stdio.h>\n#define N 64\n__device__ float f(float v) { return 2 * v; }\n__device__ float g(float v) { return v + 1; }\n\n__global__ void k(float *a) { a[threadIdx.x] = g(f(a[threadIdx.x])); }\nint main() { float *a; k<<<1, N>>>(a); printf(\"done\\n\"); return 0; }\n"
        );
    }

    #[test]
    fn a_new_include_goes_to_the_top_and_a_missing_kernel_is_an_error() {
        let unit = "#include <cuda_fp16.h>\n__global__ void k(float *a) { a[0] = __half2float(__float2half(a[0])); }\n";
        let out = splice_kernel_into_program(PROGRAM, "k", unit).unwrap();
        assert!(
            out.starts_with("#include <cuda_fp16.h>\n#include <stdio.h>\n"),
            "{out}"
        );
        assert!(out.contains("int main()"), "{out}");
        let err =
            splice_kernel_into_program(PROGRAM, "k", "__global__ void other() {}\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("the new unit has no definition of `k`"),
            "{err}"
        );
    }
}
