//! What nvcc's environment gives every CUDA file and NVRTC does not: the C library's macros (`M_PI`,
//! `INFINITY`, `INT_MAX`, …), gcc's builtins that glibc's macros expand to, the fixed-width integer types
//! and glibc's `uint` family. kt puts the ones a unit uses in front of it under NVRTC, so that a kernel
//! written for nvcc compiles there without the nvcc fallback.

/// What nvcc's compile environment gives every CUDA file whether or not it includes the header — nvcc
/// compiles with the host's C library in reach, so `M_PI` or `INFINITY` arrive through any header that
/// includes `<math.h>` (and kt leaves host-only headers out of the unit) — as `(name, definition)`:
/// the macros of `<math.h>`, `<float.h>`, `<limits.h>`, `<stdint.h>` and `<assert.h>`.
const STANDARD_MACROS: &[(&str, &str)] = &[
    ("M_E", "2.71828182845904523536"),
    ("M_LOG2E", "1.44269504088896340736"),
    ("M_LOG10E", "0.434294481903251827651"),
    ("M_LN2", "0.693147180559945309417"),
    ("M_LN10", "2.30258509299404568402"),
    ("M_PI", "3.14159265358979323846"),
    ("M_PI_2", "1.57079632679489661923"),
    ("M_PI_4", "0.785398163397448309616"),
    ("M_1_PI", "0.318309886183790671538"),
    ("M_2_PI", "0.636619772367581343076"),
    ("M_2_SQRTPI", "1.12837916709551257390"),
    ("M_SQRT2", "1.41421356237309504880"),
    ("M_SQRT1_2", "0.707106781186547524401"),
    ("INFINITY", "(1.0f / 0.0f)"),
    ("NAN", "(0.0f / 0.0f)"),
    ("HUGE_VALF", "(1.0f / 0.0f)"),
    ("HUGE_VAL", "(1.0 / 0.0)"),
    ("FLT_MAX", "3.402823466e+38F"),
    ("FLT_MIN", "1.175494351e-38F"),
    ("FLT_EPSILON", "1.192092896e-07F"),
    ("DBL_MAX", "1.7976931348623158e+308"),
    ("DBL_MIN", "2.2250738585072014e-308"),
    ("DBL_EPSILON", "2.2204460492503131e-016"),
    ("CHAR_BIT", "8"),
    ("SHRT_MAX", "32767"),
    ("SHRT_MIN", "(-32768)"),
    ("USHRT_MAX", "65535"),
    ("INT_MAX", "2147483647"),
    ("INT_MIN", "(-2147483647 - 1)"),
    ("UINT_MAX", "4294967295U"),
    ("LONG_MAX", "9223372036854775807L"),
    ("LONG_MIN", "(-9223372036854775807L - 1L)"),
    ("ULONG_MAX", "18446744073709551615UL"),
    ("LLONG_MAX", "9223372036854775807LL"),
    ("LLONG_MIN", "(-9223372036854775807LL - 1LL)"),
    ("ULLONG_MAX", "18446744073709551615ULL"),
    ("INT8_MAX", "127"),
    ("INT8_MIN", "(-128)"),
    ("UINT8_MAX", "255"),
    ("INT16_MAX", "32767"),
    ("INT16_MIN", "(-32768)"),
    ("UINT16_MAX", "65535"),
    ("INT32_MAX", "2147483647"),
    ("INT32_MIN", "(-2147483647 - 1)"),
    ("UINT32_MAX", "4294967295U"),
    ("INT64_MAX", "9223372036854775807LL"),
    ("INT64_MIN", "(-9223372036854775807LL - 1LL)"),
    ("UINT64_MAX", "18446744073709551615ULL"),
    ("SIZE_MAX", "18446744073709551615ULL"),
    ("assert(e)", "((e) ? (void)0 : __trap())"),
];

/// The fixed-width integer types, for a unit that uses them without including `<stdint.h>`.
const STANDARD_TYPES: &[(&str, &str)] = &[
    ("int8_t", "signed char"),
    ("int16_t", "short"),
    ("int32_t", "int"),
    ("int64_t", "long"),
    ("uint8_t", "unsigned char"),
    ("uint16_t", "unsigned short"),
    ("uint32_t", "unsigned int"),
    ("uint64_t", "unsigned long"),
    ("intptr_t", "long"),
    ("uintptr_t", "unsigned long"),
];

/// glibc's `<sys/types.h>` names, which nvcc's host headers declare for every file and NVRTC does not.
const HOST_TYPES: &[(&str, &str)] = &[
    ("uint", "unsigned int"),
    ("ulong", "unsigned long"),
    ("ushort", "unsigned short"),
    ("uchar", "unsigned char"),
];

/// gcc's builtins that device code reaches directly or through glibc's macros, none of which NVRTC knows
/// (experiments/nvrtc-env/probe.py, CUDA 13.0), as function-like macros over what NVRTC has. The
/// infinities and NaNs are constant divisions, so they stay usable in `constexpr` initialisers.
const BUILTINS: &[(&str, &str)] = &[
    ("__builtin_huge_valf()", "(1.0f / 0.0f)"),
    ("__builtin_huge_val()", "(1.0 / 0.0)"),
    ("__builtin_inff()", "(1.0f / 0.0f)"),
    ("__builtin_inf()", "(1.0 / 0.0)"),
    ("__builtin_nanf(s)", "(0.0f / 0.0f)"),
    ("__builtin_nan(s)", "(0.0 / 0.0)"),
    ("__builtin_fabsf(x)", "fabsf(x)"),
    ("__builtin_fabs(x)", "fabs(x)"),
    ("__builtin_sqrtf(x)", "sqrtf(x)"),
    ("__builtin_expf(x)", "expf(x)"),
    ("__builtin_fmaxf(x, y)", "fmaxf(x, y)"),
    ("__builtin_fminf(x, y)", "fminf(x, y)"),
    ("__builtin_popcount(x)", "__popc(x)"),
    ("__builtin_popcountll(x)", "__popcll(x)"),
    ("__builtin_clz(x)", "__clz(x)"),
    ("__builtin_clzll(x)", "__clzll(x)"),
    ("__builtin_ctz(x)", "(__ffs(x) - 1)"),
    ("__builtin_ctzll(x)", "(__ffsll(x) - 1)"),
];

/// The lines to put in front of a unit under NVRTC: the standard macros and gcc builtins it uses (each
/// behind `#ifndef`, so a definition of the unit's own or of a header wins), the fixed-width types it uses
/// without including a header that declares them, and glibc's `uint` and friends unless it declares them
/// itself. Nothing for a unit that uses none — the usual case.
pub fn standard_prelude(unit: &str) -> String {
    let words: std::collections::HashSet<&str> = unit
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = String::new();
    for (name, value) in STANDARD_MACROS.iter().chain(BUILTINS) {
        let bare = name.split('(').next().unwrap_or(name);
        if words.contains(bare) {
            out.push_str(&format!("#ifndef {bare}\n#define {name} {value}\n#endif\n"));
        }
    }
    for (name, ty) in HOST_TYPES {
        if words.contains(name) && !declares_itself(unit, name) {
            out.push_str(&format!("typedef {ty} {name};\n"));
        }
    }
    let declares_types = [
        "stdint.h",
        "cstdint",
        "cuda/std/cstdint",
        "inttypes.h",
        "cinttypes",
    ]
    .iter()
    .any(|h| unit.contains(&format!("<{h}>")));
    if !declares_types {
        for (name, ty) in STANDARD_TYPES {
            if words.contains(name) && !declares_itself(unit, name) {
                out.push_str(&format!("typedef {ty} {name};\n"));
            }
        }
    }
    out
}

/// Whether the unit declares `name` itself (`typedef … name;` or `using name = …`).
fn declares_itself(unit: &str, name: &str) -> bool {
    unit.contains(&format!(" {name};")) || unit.contains(&format!("{name} ="))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_that_uses_no_standard_name_gets_no_prelude() {
        assert_eq!(
            standard_prelude("__global__ void k(float *a) { a[0] = 1.0f; }"),
            ""
        );
    }

    #[test]
    fn infinities_are_constant_divisions_not_gcc_builtins() {
        let p = standard_prelude("__device__ const float lo = -INFINITY; float n = NAN;");
        assert!(p.contains("#define INFINITY (1.0f / 0.0f)"), "{p}");
        assert!(p.contains("#define NAN (0.0f / 0.0f)"), "{p}");
        assert!(!p.contains("__builtin"), "{p}");
    }

    #[test]
    fn gcc_builtins_a_unit_calls_become_what_nvrtc_has() {
        let p = standard_prelude(
            "x = __builtin_huge_valf(); y = __builtin_popcount(m); z = __builtin_nanf(\"\");",
        );
        assert!(
            p.contains("#ifndef __builtin_huge_valf\n#define __builtin_huge_valf() (1.0f / 0.0f)"),
            "{p}"
        );
        assert!(p.contains("#define __builtin_popcount(x) __popc(x)"), "{p}");
        assert!(p.contains("#define __builtin_nanf(s) (0.0f / 0.0f)"), "{p}");
        assert!(!p.contains("__builtin_clz"), "only what the unit uses: {p}");
    }

    #[test]
    fn glibc_short_unsigned_names_are_declared_unless_the_unit_does() {
        let p =
            standard_prelude("__global__ void k(uint *o, ulong n) { ushort s = 0; uchar c = 0; }");
        for t in [
            "typedef unsigned int uint;",
            "typedef unsigned long ulong;",
            "typedef unsigned short ushort;",
            "typedef unsigned char uchar;",
        ] {
            assert!(p.contains(t), "{t}: {p}");
        }
        let own = standard_prelude("typedef unsigned int uint;\n__global__ void k(uint *o) {}");
        assert!(!own.contains("uint;"), "{own}");
        // a word inside another is not a use
        assert!(!standard_prelude("int uintx = 0; unsigned int_uint;").contains("typedef"));
    }

    #[test]
    fn fixed_width_types_are_left_to_a_header_that_declares_them() {
        assert!(standard_prelude("int32_t n;").contains("typedef int int32_t;"));
        assert!(!standard_prelude("#include <cstdint>\nint32_t n;").contains("typedef"));
    }
}
