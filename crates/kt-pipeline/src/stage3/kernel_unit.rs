//! What kt keeps of an answer's code: the kernel's unit (the kernel with everything before it that it may
//! need: macros, constants, device helpers), without the host code models add around it (a launcher, a
//! `main`, host-only includes). What was dropped is said in the feedback, so the model learns the format.
//!
//! kt-cuda is gaining a unit extraction of its own (`kt_cuda::extract_unit`); [`kernel_unit`] is the one
//! place to switch to it.

/// Headers that only host code needs; NVRTC cannot compile most of them.
const HOST_HEADERS: &[&str] = &[
    "cuda_runtime.h",
    "cuda_runtime_api.h",
    "cuda.h",
    "stdio.h",
    "cstdio",
    "stdlib.h",
    "cstdlib",
    "iostream",
    "vector",
    "string",
    "cassert",
    "assert.h",
    "chrono",
    "algorithm",
];

/// The kept code and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelUnit {
    pub code: String,
    /// What was left out, in words (empty when the code was only the kernel's unit).
    pub dropped: Vec<String>,
}

/// The unit of kernel `name` in `code`: the text up to the end of the kernel's definition, without includes
/// of host-only headers. Code after the kernel is dropped unless a device function defined there is needed
/// (then everything is kept, and the static checks decide). Code that does not parse is kept as it is.
pub fn kernel_unit(code: &str, name: &str) -> KernelUnit {
    let mut dropped = Vec::new();
    let Ok(parsed) = kt_cuda::parse_tolerant(code) else {
        return KernelUnit {
            code: code.to_string(),
            dropped,
        };
    };
    let Some(kernel) = parsed.kernels.iter().find(|k| k.name == name) else {
        return KernelUnit {
            code: code.to_string(),
            dropped,
        };
    };
    let end_line = kernel.span.end.line;
    let helper_after = parsed
        .device_functions
        .iter()
        .any(|f| f.span.start.line > end_line && kernel.helpers.contains(&f.name));
    let lines: Vec<&str> = code.lines().collect();
    let mut end = end_line.min(lines.len());
    // Comment lines right after the kernel belong to it.
    while end < lines.len() && {
        let t = lines[end].trim_start();
        t.is_empty() || t.starts_with("//")
    } {
        end += 1;
    }
    // Comments after the kernel stay; code there (a launcher, main) goes, unless the kernel needs it.
    let code_after = !strip_comments(&lines[end..].join("\n")).trim().is_empty();
    let cut = if helper_after || !code_after {
        lines.len()
    } else {
        dropped.push("the code after the kernel (host code such as a launcher or main)".into());
        end
    };
    let mut kept: Vec<&str> = Vec::new();
    for line in &lines[..cut] {
        match included_header(line) {
            Some(h) if HOST_HEADERS.contains(&h) => dropped.push(format!("#include <{h}>")),
            _ => kept.push(line),
        }
    }
    let mut text = kept.join("\n");
    // A kernel inside `extern "C" { ... }` whose block closes after it: close it again.
    let open = brace_balance(&strip_comments(&text));
    for _ in 0..open.max(0) {
        text.push_str("\n}");
    }
    text.push('\n');
    KernelUnit {
        code: text,
        dropped,
    }
}

/// The header named by an `#include` line.
fn included_header(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?.trim();
    let inner = rest
        .strip_prefix('<')
        .and_then(|r| r.split_once('>'))
        .or_else(|| rest.strip_prefix('"').and_then(|r| r.split_once('"')))?;
    Some(inner.0.trim())
}

fn brace_balance(code: &str) -> i64 {
    code.chars().fold(0, |n, c| match c {
        '{' => n + 1,
        '}' => n - 1,
        _ => n,
    })
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const WITH_HOST: &str = r#"#include <cuda_runtime.h>
#include <stdio.h>
#define TILE 16
__device__ float twice(float x) { return 2.0f * x; }
extern "C" __global__ void scale(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
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
        assert!(unit.code.contains("#define TILE 16") && unit.code.contains("twice"));
        assert!(!unit.code.contains("cuda_runtime.h"));
        assert_eq!(unit.dropped.len(), 3, "{:?}", unit.dropped);
    }

    #[test]
    fn a_kernel_alone_is_kept_as_it_is() {
        let code = "__global__ void k(float* a) { a[0] = 1.0f; }\n";
        let unit = kernel_unit(code, "k");
        assert_eq!(unit.code, code);
        assert!(unit.dropped.is_empty());
    }

    #[test]
    fn an_extern_c_block_is_closed_again() {
        let code = "extern \"C\" {\n__global__ void k(float* a) { a[0] = 1.0f; }\nvoid host() { k<<<1, 1>>>(0); }\n}\n";
        let unit = kernel_unit(code, "k");
        assert!(!unit.code.contains("<<<"), "{}", unit.code);
        assert_eq!(brace_balance(&unit.code), 0, "{}", unit.code);
    }

    #[test]
    fn comments_are_blanked_but_strings_kept() {
        let s = strip_comments("a // k<<<1,1>>>\nb /* cublas */ c \"//x\"");
        assert!(!s.contains("<<<") && !s.contains("cublas"), "{s}");
        assert!(s.contains("\"//x\"") && s.contains('a') && s.contains('c'));
    }
}
