//! Headers never stop a compile. NVRTC has no system include path: a kernel written for nvcc includes
//! `<cuda_runtime.h>`, `<stdio.h>` or `<cstdint>` and NVRTC "cannot open source file". kt gives NVRTC
//!
//! - small built-in headers for the standard and runtime headers device code does not need (NVRTC already
//!   declares the device runtime, `printf` and the math functions), or needs only a few names from
//!   (fixed-width integers, `assert`, `std::` math);
//! - the CUDA toolkit's include directory when the machine has one (`CUDA_HOME`, `CUDA_PATH`,
//!   `/usr/local/cuda`, or the include directory of the NVRTC package next to libnvrtc), for `cuda_fp16.h`,
//!   `cuda_bf16.h` and the other device headers;
//! - the kernel file's own directory and the user's `--include` directories, for `#include "common.h"`.

use std::path::{Path, PathBuf};

// The built-in headers' contents.
const EMPTY: &str = "#pragma once\n";
const STDINT: &str = "#pragma once
#ifndef KT_STDINT
#define KT_STDINT
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
#ifdef __INT64_TYPE__
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;
#else
typedef long long int64_t;
typedef unsigned long long uint64_t;
#endif
typedef int64_t intptr_t;
typedef uint64_t uintptr_t;
#define INT32_MAX 2147483647
#define INT32_MIN (-INT32_MAX - 1)
#define UINT32_MAX 4294967295u
#define INT64_MAX 9223372036854775807ll
#define UINT64_MAX 18446744073709551615ull
#endif
";
const ASSERT: &str = "#pragma once
#ifndef assert
#define assert(e) ((e) ? (void)0 : __trap())
#endif
";
// The math functions are NVRTC built-ins; what math.h adds for device code is its constants (POSIX's
// M_PI and friends, which kernels such as GELU use). Its infinities are constant divisions: NVRTC knows
// none of gcc's `__builtin_huge_valf` family that glibc's expand to (experiments/nvrtc-env/probe.py).
const MATH_CONSTANTS: &str = "#pragma once
#ifndef M_PI
#define M_E 2.71828182845904523536
#define M_LOG2E 1.44269504088896340736
#define M_LOG10E 0.434294481903251827651
#define M_LN2 0.693147180559945309417
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.785398163397448309616
#define M_1_PI 0.318309886183790671538
#define M_2_PI 0.636619772367581343076
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.707106781186547524401
#endif
#ifndef INFINITY
#define INFINITY (1.0f / 0.0f)
#define NAN (0.0f / 0.0f)
#define HUGE_VALF (1.0f / 0.0f)
#define HUGE_VAL (1.0 / 0.0)
#endif
";
const CMATH: &str = "#pragma once
#include <math.h>
namespace std {
using ::sqrt; using ::exp; using ::log; using ::pow; using ::sin; using ::cos; using ::tanh;
using ::floor; using ::ceil; using ::fabs; using ::fmin; using ::fmax; using ::erf;
}
";
const CFLOAT: &str = "#pragma once
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-016
#endif
";
const LIMITS: &str = "#pragma once
#ifndef INT_MAX
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#define SHRT_MIN (-32768)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-INT_MAX - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MIN (-LONG_MAX - 1L)
#define LONG_MAX 9223372036854775807L
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MIN (-LLONG_MAX - 1LL)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
#endif
";
// The C++ library's device-usable half is libcu++ (CCCL, on the toolkit's include path): std:: names
// device code takes from these headers are cuda::std's.
const TYPE_TRAITS: &str = "#pragma once
#include <cuda/std/type_traits>
namespace std { using namespace ::cuda::std; }
";
const NUMERIC_LIMITS: &str = "#pragma once
#include <cuda/std/limits>
namespace std { using namespace ::cuda::std; }
";

/// `#include` names NVRTC cannot open that kt answers itself, with their contents.
pub fn builtin_headers() -> Vec<(&'static str, &'static str)> {
    vec![
        ("cuda_runtime.h", EMPTY),
        ("cuda_runtime_api.h", EMPTY),
        ("cuda.h", EMPTY),
        ("device_launch_parameters.h", EMPTY),
        ("stdio.h", EMPTY),
        ("cstdio", EMPTY),
        ("stdlib.h", EMPTY),
        ("cstdlib", EMPTY),
        ("string.h", EMPTY),
        ("cstring", EMPTY),
        ("math.h", MATH_CONSTANTS),
        ("cmath", CMATH),
        ("stdint.h", STDINT),
        ("cstdint", STDINT),
        ("assert.h", ASSERT),
        ("cassert", ASSERT),
        ("float.h", CFLOAT),
        ("cfloat", CFLOAT),
        ("limits.h", LIMITS),
        ("climits", LIMITS),
        ("type_traits", TYPE_TRAITS),
        ("limits", NUMERIC_LIMITS),
    ]
}

/// The `-I` directories of the CUDA toolkit: its include directory and, where the toolkit keeps libcu++
/// apart (CUDA 13 moved CCCL to `include/cccl`), that one too: `<cooperative_groups.h>` includes
/// `<cuda/std/type_traits>` under NVRTC, and a missing one is NVRTC's "catastrophic error".
pub fn cuda_include_dirs() -> Vec<PathBuf> {
    cuda_include_dir()
        .map(|d| with_cccl(&d))
        .unwrap_or_default()
}

/// `dir`, then the directory under it that holds `cuda/std/` when that is not `dir` itself.
fn with_cccl(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let cccl = dir.join("cccl");
    if !dir.join("cuda/std").is_dir() && cccl.join("cuda/std").is_dir() {
        out.push(cccl);
    }
    out
}

/// The CUDA toolkit's include directory, if the machine has one holding `cuda_fp16.h`.
pub fn cuda_include_dir() -> Option<PathBuf> {
    let env_dirs = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|d| PathBuf::from(d).join("include"));
    let fixed = [PathBuf::from("/usr/local/cuda/include")];
    env_dirs
        .chain(fixed)
        .chain(nvrtc_package_includes())
        .find(|d| d.join("cuda_fp16.h").is_file())
}

/// Include directories beside the loaded libnvrtc (a pip wheel keeps `lib/libnvrtc.so` beside `include/`,
/// and the runtime headers in a sibling package).
fn nvrtc_package_includes() -> Vec<PathBuf> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let Some(lib) = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("libnvrtc.so"))
        .map(PathBuf::from)
    else {
        return Vec::new();
    };
    candidates_beside(&lib)
}

fn candidates_beside(lib: &Path) -> Vec<PathBuf> {
    let Some(lib_dir) = lib.parent() else {
        return Vec::new();
    };
    let Some(package) = lib_dir.parent() else {
        return Vec::new();
    };
    let mut out = vec![package.join("include")];
    if let Some(vendor) = package.parent() {
        out.push(vendor.join("cuda_runtime").join("include"));
    }
    out
}

/// The files a source pulls in with `#include "..."`, found in `dirs`, followed transitively: their contents
/// are part of a module's identity (a changed header must not reuse a stale CUBIN).
pub fn user_headers(source: &str, dirs: &[PathBuf]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut pending: Vec<String> = quoted_includes(source);
    while let Some(name) = pending.pop() {
        let Some(path) = dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file()) else {
            continue;
        };
        if found.iter().any(|(p, _)| *p == path) || found.len() >= 256 {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        pending.extend(quoted_includes(&String::from_utf8_lossy(&bytes)));
        found.push((path, bytes));
    }
    found
}

/// The names of `#include "name"` lines.
fn quoted_includes(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let rest = rest.strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_and_standard_headers_are_answered_by_kt() {
        let names: Vec<&str> = builtin_headers().iter().map(|h| h.0).collect();
        for h in [
            "cuda_runtime.h",
            "cuda.h",
            "stdio.h",
            "stdlib.h",
            "math.h",
            "cstdio",
            "cmath",
            "cstdint",
            "assert.h",
        ] {
            assert!(names.contains(&h), "{h} missing");
        }
        // the device headers come from the toolkit or NVRTC itself, never from a stub
        assert!(!names.contains(&"cuda_fp16.h") && !names.contains(&"cuda_bf16.h"));
    }

    #[test]
    fn quoted_includes_are_followed_through_the_include_dirs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("common.h"),
            "#include \"inner.h\"\n#define N 4\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("inner.h"), "typedef float real;\n").unwrap();
        let src = "#include <stdio.h>\n  #  include \"common.h\"\n#include \"missing.h\"\n";
        let found = user_headers(src, &[dir.path().to_path_buf()]);
        let names: Vec<String> = found
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["common.h", "inner.h"]);
    }

    #[test]
    fn a_toolkit_that_keeps_libcudacxx_under_cccl_gets_both_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let inc = dir.path().join("include");
        std::fs::create_dir_all(inc.join("cccl/cuda/std")).unwrap();
        assert_eq!(with_cccl(&inc), vec![inc.clone(), inc.join("cccl")]);
        // CUDA 12 keeps cuda/std beside cuda_fp16.h: one directory is enough
        std::fs::create_dir_all(inc.join("cuda/std")).unwrap();
        assert_eq!(with_cccl(&inc), vec![inc.clone()]);
    }

    #[test]
    fn a_wheel_layout_offers_its_include_dirs() {
        let c = candidates_beside(Path::new("/site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
        assert_eq!(
            c,
            vec![
                PathBuf::from("/site/nvidia/cuda_nvrtc/include"),
                PathBuf::from("/site/nvidia/cuda_runtime/include")
            ]
        );
    }
}
