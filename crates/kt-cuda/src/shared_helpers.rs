//! Dynamic shared memory reached through a helper type: the CUDA samples' `SharedMemory<T>` (a struct whose
//! `operator T*()` returns an `extern __shared__` array) and SHOC's `SharedMem<T>::getPointer()`. A kernel
//! that names such a type uses dynamic shared memory although its own body declares none.

/// Names of the structs and classes in `text` whose definition declares an `extern __shared__` array.
pub(crate) fn dynamic_shared_types(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for keyword in ["struct", "class"] {
        let mut from = 0;
        while let Some(found) = text[from..].find(keyword) {
            let at = from + found;
            from = at + keyword.len();
            let before_ok = at == 0 || !is_word(text.as_bytes()[at - 1]);
            let after = &text[from..];
            if !before_ok || !after.starts_with(|c: char| c.is_whitespace()) {
                continue;
            }
            let name: String = after
                .trim_start()
                .chars()
                .take_while(|&c| c.is_ascii_alphanumeric() || c == '_')
                .collect();
            let Some(open) = after.find(['{', ';']) else {
                continue;
            };
            let name_end = after.len() - after.trim_start().len() + name.len();
            // `template <class T> struct S {`: the `class` of a template parameter names no type here
            let head = &after[name_end.min(open)..open];
            if name.is_empty()
                || after.as_bytes()[open] != b'{'
                || head.contains(['>', ',', '(', ')'])
            {
                continue;
            }
            let body = balanced(&after[open..]);
            let declares = body
                .split(';')
                .any(|stmt| stmt.contains("extern") && stmt.contains("__shared__"));
            if declares && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The text from a `{` to its matching `}` (or to the end).
fn balanced(from_open: &str) -> &str {
    let mut depth = 0;
    for (i, c) in from_open.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &from_open[..=i];
                }
            }
            _ => {}
        }
    }
    from_open
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_types_around_an_extern_shared_array_are_found() {
        let src = "template <class T> struct SharedMemory {\n  __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }\n};\nstruct Plain { float a; };\ntemplate <class T> class SharedMem { public: __device__ T *getPointer() { extern __shared__ T s[]; return s; } };\n";
        assert_eq!(dynamic_shared_types(src), vec!["SharedMemory", "SharedMem"]);
        assert!(dynamic_shared_types("struct S;\nstruct T { __shared__ float x[4]; };").is_empty());
    }
}

#[cfg(test)]
mod kernel_tests {
    #[test]
    fn a_kernel_that_takes_its_shared_array_from_a_helper_uses_dynamic_shared_memory() {
        let src = "template <class T> struct SharedMemory {\n  __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }\n};\ntemplate <class T> __global__ void reduce0(T *in, T *out, unsigned n) {\n  T *sdata = SharedMemory<T>();\n  unsigned tid = threadIdx.x;\n  sdata[tid] = in[blockIdx.x * blockDim.x + tid];\n  __syncthreads();\n  if (tid == 0) out[blockIdx.x] = sdata[0];\n}\n__global__ void plain(float *x) { x[0] = 1; }\n";
        let parsed = crate::parse(src).unwrap();
        let f = &parsed.select_kernel(Some("reduce0")).unwrap().features;
        assert!(f.uses_dynamic_shared_memory && f.uses_shared_memory);
        let plain = &parsed.select_kernel(Some("plain")).unwrap().features;
        assert!(!plain.uses_dynamic_shared_memory);
    }
}
