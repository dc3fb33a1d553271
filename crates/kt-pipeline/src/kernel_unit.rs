//! What kt compiles of a kernel's code — the user's file or an answer's code: the kernel's own unit
//! (kt-cuda's [`kt_cuda::extract_unit`]: the kernel with the device functions, types, macros, constants and
//! includes it uses) whenever the code holds more than that (host code such as a launcher or a `main`,
//! other kernels, host-only includes, user headers). Code that is already only the kernel's unit is kept as
//! it is, comments included (a one-line description of what the kernel computes reaches every prompt). What
//! was left out is said in words, so the model learns the format.

use std::path::PathBuf;

use kt_cuda::{ItemKind, SourceFile, UnitItem};

/// The kept code and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelUnit {
    pub code: String,
    /// What was left out, in words (empty when the code was only the kernel's unit).
    pub dropped: Vec<String>,
}

/// Whether the unit leaves out part of a program rather than just unused helpers: host code, another
/// kernel, or an include (a host-only header, or a user header whose items the unit carries inline).
pub fn leaves_out_program(unit: &kt_cuda::KernelUnit) -> bool {
    unit.dropped_host_items.iter().any(program_part)
}

fn program_part(item: &UnitItem) -> bool {
    item.kind.is_host() || matches!(item.kind, ItemKind::Kernel | ItemKind::Include)
}

fn describe(item: &UnitItem) -> String {
    match item.kind {
        ItemKind::Include => format!("#include {}", item.name),
        ItemKind::Kernel => format!("the other kernel `{}`", item.name),
        ItemKind::HostVariable => format!("the host variable `{}`", item.name),
        _ => format!("the host code `{}` (line {})", item.name, item.line),
    }
}

/// The unit of kernel `name` in `file` when `file` holds more than that unit (see [`leaves_out_program`]) or
/// includes user headers (the unit carries what the kernel uses of them, so it compiles and is delivered on
/// its own); None when the file is the kernel's unit already. Errors name the file: no such kernel, a unit
/// that does not parse back.
pub fn program_unit(
    file: &SourceFile,
    name: &str,
) -> Result<Option<kt_cuda::KernelUnit>, kt_cuda::CudaError> {
    let unit = kt_cuda::extract_unit(file, name)?;
    Ok((leaves_out_program(&unit) || !file.followed().is_empty()).then_some(unit))
}

/// The unit of kernel `name` in an answer's `code`, its user headers looked up in `include_dirs`. Code that
/// does not parse, or lacks the kernel, is kept as it is: the static checks then say what is wrong.
pub fn kernel_unit_in(code: &str, name: &str, include_dirs: &[PathBuf]) -> KernelUnit {
    let file = SourceFile::from_text("the answer", code, include_dirs);
    match program_unit(&file, name) {
        Ok(Some(unit)) => KernelUnit {
            code: unit.text.clone(),
            dropped: unit
                .dropped_host_items
                .iter()
                .filter(|i| program_part(i))
                .map(describe)
                .collect(),
        },
        Ok(None) | Err(_) => KernelUnit {
            code: code.to_string(),
            dropped: Vec::new(),
        },
    }
}

/// [`kernel_unit_in`] without include directories.
pub fn kernel_unit(code: &str, name: &str) -> KernelUnit {
    kernel_unit_in(code, name, &[])
}

/// `code` with its comments replaced by spaces (string and character literals are kept as they are, so a
/// `//` inside a string is not a comment).
pub fn strip_comments(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '"' | '\'' => {
                out.push(c);
                let mut escaped = false;
                for d in chars.by_ref() {
                    out.push(d);
                    if escaped {
                        escaped = false;
                    } else if d == '\\' {
                        escaped = true;
                    } else if d == c || d == '\n' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const WITH_HOST: &str = r#"#include <cuda_runtime.h>
#include <stdio.h>
#define TILE 16
__device__ float twice(float x) { return 2.0f * x; }
extern "C" __global__ void scale(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // fake-tuning: ok 2.0
    if (i < n) a[i] = twice(a[i]);
}

void launch(float* a, int n) {
    scale<<<(n + 255) / 256, 256>>>(a, n);
    cudaDeviceSynchronize();
}
"#;

    #[test]
    fn a_launcher_and_host_includes_are_dropped_and_the_kernel_kept() {
        let unit = kernel_unit(WITH_HOST, "scale");
        assert!(
            !unit.code.contains("<<<") && !unit.code.contains("launch"),
            "{}",
            unit.code
        );
        assert!(unit.code.contains("twice") && unit.code.contains("fake-tuning: ok 2.0"));
        assert!(!unit.code.contains("cuda_runtime.h"));
        assert_eq!(unit.dropped.len(), 3, "{:?}", unit.dropped);
        assert!(
            unit.dropped.iter().any(|d| d.contains("launch")),
            "{:?}",
            unit.dropped
        );
    }

    #[test]
    fn a_kernel_alone_is_kept_as_it_is_with_its_comments() {
        let code =
            "// adds one\n__global__ void k(float* a) { a[0] = 1.0f; }\n// fake-tuning: ok 3.0\n";
        let unit = kernel_unit(code, "k");
        assert_eq!(unit.code, code);
        assert!(unit.dropped.is_empty());
    }

    #[test]
    fn a_kernel_in_an_extern_c_block_keeps_its_block_and_loses_the_host_code() {
        let code = "extern \"C\" {\n__global__ void k(float* a) { a[0] = 1.0f; }\nvoid host() { k<<<1, 1>>>(0); }\n}\n";
        let unit = kernel_unit(code, "k");
        assert!(!unit.code.contains("<<<"), "{}", unit.code);
        let parsed = kt_cuda::parse(&unit.code).unwrap();
        assert_eq!(parsed.select_kernel(None).unwrap().name, "k");
    }

    #[test]
    fn another_kernel_is_left_out_and_said_so() {
        let code = "__global__ void a(float* x) { x[0] = 1.0f; }\n__global__ void b(float* x) { x[0] = 2.0f; }\n";
        let unit = kernel_unit(code, "b");
        assert!(!unit.code.contains("void a("), "{}", unit.code);
        assert_eq!(unit.dropped, vec!["the other kernel `a`".to_string()]);
    }

    #[test]
    fn code_without_the_kernel_is_kept_for_the_checks_to_judge() {
        let code = "__global__ void other(float* x) {}\nint main() { return 0; }\n";
        assert_eq!(kernel_unit(code, "k").code, code);
    }

    #[test]
    fn comments_are_blanked_but_strings_kept() {
        let s = strip_comments("a // k<<<1,1>>>\nb /* cublas */ c \"//x\"");
        assert!(!s.contains("<<<") && !s.contains("cublas"), "{s}");
        assert!(s.contains("\"//x\"") && s.contains('a') && s.contains('c'));
    }
}
