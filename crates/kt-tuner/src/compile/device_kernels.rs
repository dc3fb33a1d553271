//! kt-tuner's own CUDA kernels, compiled once per device (and cached like any module): filling arrays from
//! a seeded counter-based generator (so multi-GB inputs are made on the GPU in milliseconds and are the same
//! on every run), poisoning outputs, comparing an output with its expected values on the GPU, and measuring
//! the FP32 rate (`kt_fma_rate`: [`FMA_FLOPS_PER_ROUND`] flops a thread a round).

use kt_record::DType;

/// Kernel-name suffix for a dtype.
pub fn suffix(dtype: DType) -> &'static str {
    match dtype {
        DType::Float16 => "f16",
        DType::Bfloat16 => "bf16",
        DType::Float32 => "f32",
        DType::Float64 => "f64",
        DType::Int8 => "i8",
        DType::Int16 => "i16",
        DType::Int32 => "i32",
        DType::Int64 => "i64",
        DType::Uint8 => "u8",
        DType::Uint16 => "u16",
        DType::Uint32 => "u32",
        DType::Uint64 => "u64",
    }
}

/// Flops one thread of `kt_fma_rate` does per round of its loop (eight FMAs).
pub const FMA_FLOPS_PER_ROUND: f64 = 16.0;

/// Distribution codes shared with the fill kernels.
pub const DIST_RANDN: i32 = 0;
pub const DIST_RAND: i32 = 1;
pub const DIST_CONST: i32 = 2;
pub const DIST_RANDINT: i32 = 3;

/// Layout of the compare kernel's result block (u64 words).
pub const CMP_MISMATCHES: usize = 0;
pub const CMP_FIRST: usize = 1;
pub const CMP_POISON: usize = 2;
pub const CMP_MAX_ABS: usize = 3;
pub const CMP_MAX_REL: usize = 4;
/// Wrong elements (not poison) where the kernel's value is above the expected one: an allowance for
/// scattered disagreements must not absorb an error that goes one way (see `check::one_sided`).
pub const CMP_ABOVE: usize = 5;
pub const CMP_WORDS: usize = 6;

pub const SOURCE: &str = r#"
typedef unsigned long long u64;
typedef unsigned short f16bits;

__device__ __forceinline__ u64 kt_mix(u64 x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
__device__ __forceinline__ double kt_uniform(u64 seed, u64 i, u64 stream) {
    return (double)(kt_mix(seed * 0x632BE59BD9B4E019ull ^ kt_mix(i * 2 + stream)) >> 11) * (1.0 / 9007199254740992.0);
}
__device__ double kt_sample(int dist, double a, double b, u64 seed, u64 i) {
    if (dist == 0) {
        // a: the standard deviation (0: 1)
        double u1 = kt_uniform(seed, i, 0), u2 = kt_uniform(seed, i, 1);
        if (u1 < 1e-300) u1 = 1e-300;
        return (a != 0.0 ? a : 1.0) * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
    }
    if (dist == 1) return kt_uniform(seed, i, 0);
    if (dist == 2) return a;
    return a + floor(kt_uniform(seed, i, 0) * (b - a));
}
// FP32 rate: eight independent FMA chains a thread, `iters` rounds (16 flops a thread a round); the sum is
// stored only when it equals a value it never reaches, so the chains stay live without a store per round.
extern "C" __global__ void kt_fma_rate(float* sink, int iters, float seed) {
    float x = seed + threadIdx.x * 1e-7f;
    float a0 = x, a1 = x + 1e-3f, a2 = x + 2e-3f, a3 = x + 3e-3f;
    float a4 = x + 4e-3f, a5 = x + 5e-3f, a6 = x + 6e-3f, a7 = x + 7e-3f;
    const float m = 0.9999999f, c = 1e-9f;
    for (int i = 0; i < iters; ++i) {
        a0 = fmaf(a0, m, c); a1 = fmaf(a1, m, c); a2 = fmaf(a2, m, c); a3 = fmaf(a3, m, c);
        a4 = fmaf(a4, m, c); a5 = fmaf(a5, m, c); a6 = fmaf(a6, m, c); a7 = fmaf(a7, m, c);
    }
    float s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    if (s == -1234.5f) sink[0] = s;
}
__device__ f16bits kt_to_half(float v) {
    unsigned int bits = __float_as_uint(v);
    unsigned short sign = (bits >> 16) & 0x8000;
    int e = (int)((bits >> 23) & 0xff) - 127 + 15;
    unsigned int m = bits & 0x7fffff;
    if (e <= 0) return sign;
    if (e >= 31) return sign | 0x7c00;
    unsigned short h = sign | (e << 10) | (m >> 13);
    if ((m & 0x1fff) > 0x1000 || ((m & 0x1fff) == 0x1000 && (h & 1))) h++;
    return h;
}
__device__ f16bits kt_to_bf16(float v) {
    unsigned int bits = __float_as_uint(v);
    if (v != v) return 0x7fc0;
    return (f16bits)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}
__device__ double kt_from_bf16(f16bits h) { return (double)__uint_as_float(((unsigned int)h) << 16); }
__device__ double kt_from_half(f16bits h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0) return s * ldexp((double)m, -24);
    if (e == 31) return m ? __longlong_as_double(0x7ff8000000000000ll) : s * __longlong_as_double(0x7ff0000000000000ll);
    return s * ldexp((double)(m + 1024), e - 25);
}

template <typename T> __device__ void kt_fill(T* p, u64 n, int dist, double a, double b, u64 seed) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        p[i] = (T)kt_sample(dist, a, b, seed, i);
}
template <typename T> __device__ void kt_poison(T* p, u64 n, T v) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) p[i] = v;
}
__device__ void kt_record(u64* out, u64 i, double abs_err, double rel_err, bool bad, bool poison, bool above) {
    if (abs_err == abs_err && abs_err > 0.0) atomicMax(&out[3], (u64)__double_as_longlong(abs_err));
    if (rel_err == rel_err && rel_err > 0.0) atomicMax(&out[4], (u64)__double_as_longlong(rel_err));
    if (bad) {
        atomicAdd(&out[0], 1ull);
        atomicMin(&out[1], i);
        if (poison) atomicAdd(&out[2], 1ull);
        else if (above) atomicAdd(&out[5], 1ull);
    }
}
// flags bit 0 (same bits agree): a rerun compared with the first run, where the same bits (the same NaN,
// the same never-written poison) are agreement; against a reference a NaN never passes. Bit 1 (finite
// expected only): an element the reference left non-finite is not compared (inputs of large magnitude,
// where a naive reference may overflow and a careful candidate need not)
template <typename T> __device__ void kt_cmp_float(const T* got, const T* exp, u64 n, double atol, double rtol, T poison, u64 flags, u64* out) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        T gv = got[i];
        double g = (double)gv, e = (double)exp[i];
        bool is_poison = memcmp_bits(gv, poison);
        double d = fabs(g - e);
        bool skip = (flags & 2) && !(e - e == 0.0);
        bool ok = skip || ((flags & 1) && memcmp_bits(gv, exp[i])) || (!is_poison && (g == e || d <= atol + rtol * fabs(e)));
        kt_record(out, i, d, e != 0.0 ? d / fabs(e) : 0.0, !ok, is_poison, g > e);
    }
}
// sum of squares and count of the finite values (x - x == 0 only for finite x), for an output's RMS
__device__ void kt_sumsq_add(double s, u64 c, u64* out) {
    if (c) { atomicAdd((double*)&out[0], s); atomicAdd(&out[1], c); }
}
template <typename T> __device__ void kt_sumsq(const T* p, u64 n, u64* out) {
    double s = 0.0; u64 c = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double v = (double)p[i];
        if (v - v == 0.0) { s += v * v; c++; }
    }
    kt_sumsq_add(s, c, out);
}
template <typename T> __device__ void kt_cmp_int(const T* got, const T* exp, u64 n, T poison, u64* out) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        T g = got[i], e = exp[i];
        double d = g > e ? (double)(g - e) : (double)(e - g);
        kt_record(out, i, d, e != 0 ? d / fabs((double)e) : 0.0, g != e, g != e && g == poison, g > e);
    }
}
"#;

/// The dtypes a test set needs kernels for: its arrays' dtypes, plus the unsigned words inputs are
/// compared in (checked unchanged bit for bit). Compiling only these keeps the cold-start compile short.
pub fn needed_dtypes(dtypes: impl IntoIterator<Item = DType>) -> Vec<DType> {
    let mut v: Vec<DType> = dtypes
        .into_iter()
        .chain([DType::Uint8, DType::Uint32, DType::Uint64])
        .collect();
    v.sort_by_key(|d| suffix(*d));
    v.dedup();
    v
}

/// The per-dtype `extern "C"` entry points (fill, poison, compare; for floats the sum of squares an
/// output's RMS comes from) for `dtypes`.
pub fn full_source(dtypes: &[DType]) -> String {
    let mut s = String::from(SOURCE);
    s.insert_str(0, "__device__ __forceinline__ bool memcmp_bits(float a, float b) { return __float_as_uint(a) == __float_as_uint(b); }\n__device__ __forceinline__ bool memcmp_bits(double a, double b) { return __double_as_longlong(a) == __double_as_longlong(b); }\n");
    let ints = [
        ("i8", "signed char"),
        ("i16", "short"),
        ("i32", "int"),
        ("i64", "long long"),
        ("u8", "unsigned char"),
        ("u16", "unsigned short"),
        ("u32", "unsigned int"),
        ("u64", "unsigned long long"),
    ];
    let wanted = |sfx: &str| dtypes.iter().any(|d| suffix(*d) == sfx);
    for (sfx, t) in ints.into_iter().filter(|(sfx, _)| wanted(sfx)) {
        s.push_str(&format!(
            "extern \"C\" __global__ void kt_fill_{sfx}({t}* p, u64 n, int dist, double a, double b, u64 seed) {{ kt_fill<{t}>(p, n, dist, a, b, seed); }}\n\
             extern \"C\" __global__ void kt_poison_{sfx}({t}* p, u64 n, u64 v) {{ kt_poison<{t}>(p, n, ({t})v); }}\n\
             extern \"C\" __global__ void kt_compare_{sfx}(const {t}* g, const {t}* e, u64 n, double atol, double rtol, u64 poison, u64 same_bits_agree, u64* out) {{ kt_cmp_int<{t}>(g, e, n, ({t})poison, out); }}\n"
        ));
    }
    for (sfx, t, conv) in [
        ("f32", "float", "__uint_as_float((unsigned int)v)"),
        ("f64", "double", "__longlong_as_double((long long)v)"),
    ]
    .into_iter()
    .filter(|(sfx, _, _)| wanted(sfx))
    {
        s.push_str(&format!(
            "extern \"C\" __global__ void kt_fill_{sfx}({t}* p, u64 n, int dist, double a, double b, u64 seed) {{ kt_fill<{t}>(p, n, dist, a, b, seed); }}\n\
             extern \"C\" __global__ void kt_poison_{sfx}({t}* p, u64 n, u64 v) {{ kt_poison<{t}>(p, n, {conv}); }}\n\
             extern \"C\" __global__ void kt_compare_{sfx}(const {t}* g, const {t}* e, u64 n, double atol, double rtol, u64 v, u64 same_bits_agree, u64* out) {{ kt_cmp_float<{t}>(g, e, n, atol, rtol, {conv}, same_bits_agree, out); }}\n\
             extern \"C\" __global__ void kt_sumsq_{sfx}(const {t}* p, u64 n, u64* out) {{ kt_sumsq<{t}>(p, n, out); }}\n"
        ));
    }
    // half and bfloat16: stored as raw 16-bit patterns, converted by hand (no cuda_fp16.h / cuda_bf16.h
    // needed under NVRTC)
    for sfx in ["f16", "bf16"].into_iter().filter(|sfx| wanted(sfx)) {
        let (to, from) = if sfx == "f16" {
            ("kt_to_half", "kt_from_half")
        } else {
            ("kt_to_bf16", "kt_from_bf16")
        };
        s.push_str(&format!(
            "extern \"C\" __global__ void kt_fill_{sfx}(f16bits* p, u64 n, int dist, double a, double b, u64 seed) {{\n\
               for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) p[i] = {to}((float)kt_sample(dist, a, b, seed, i)); }}\n\
             extern \"C\" __global__ void kt_poison_{sfx}(f16bits* p, u64 n, u64 v) {{ kt_poison<f16bits>(p, n, (f16bits)v); }}\n\
             extern \"C\" __global__ void kt_compare_{sfx}(const f16bits* got, const f16bits* exp, u64 n, double atol, double rtol, u64 v, u64 same_bits_agree, u64* out) {{\n\
               for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {{\n\
                 double g = {from}(got[i]), e = {from}(exp[i]); bool is_poison = got[i] == (f16bits)v;\n\
                 double d = fabs(g - e); bool ok = ((same_bits_agree & 2) && !(e - e == 0.0)) || ((same_bits_agree & 1) && got[i] == exp[i]) || (!is_poison && (g == e || d <= atol + rtol * fabs(e)));\n\
                 kt_record(out, i, d, e != 0.0 ? d / fabs(e) : 0.0, !ok, is_poison, g > e); }} }}\n\
             extern \"C\" __global__ void kt_sumsq_{sfx}(const f16bits* p, u64 n, u64* out) {{\n\
               double s = 0.0; u64 c = 0;\n\
               for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {{\n\
                 double v = {from}(p[i]); if (v - v == 0.0) {{ s += v * v; c++; }} }}\n\
               kt_sumsq_add(s, c, out); }}\n"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_has_fill_poison_and_compare() {
        let all = [
            DType::Float16,
            DType::Bfloat16,
            DType::Float32,
            DType::Float64,
            DType::Int8,
            DType::Int16,
            DType::Int32,
            DType::Int64,
            DType::Uint8,
            DType::Uint16,
            DType::Uint32,
            DType::Uint64,
        ];
        let s = full_source(&all);
        for d in all {
            for k in ["fill", "poison", "compare"] {
                assert!(
                    s.contains(&format!("void kt_{k}_{}(", suffix(d))),
                    "{k} {d:?}"
                );
            }
            assert_eq!(
                s.contains(&format!("void kt_sumsq_{}(", suffix(d))),
                d.is_float(),
                "sumsq {d:?}"
            );
        }
    }

    #[test]
    fn only_the_needed_dtypes_are_generated() {
        let d = needed_dtypes([DType::Float32, DType::Float32]);
        assert_eq!(
            d,
            vec![DType::Float32, DType::Uint32, DType::Uint64, DType::Uint8]
        );
        let s = full_source(&d);
        assert!(s.contains("kt_compare_f32(") && s.contains("kt_compare_u8("));
        assert!(!s.contains("kt_compare_f64(") && !s.contains("kt_fill_f16("));
    }

    #[test]
    #[ignore = "needs NVRTC (the CUDA toolkit); experiments/gpu-check.sh runs it (--include-ignored)"]
    fn utility_kernels_compile_when_nvrtc_is_present() {
        let r = crate::compile::nvrtc::compile(
            &full_source(&needed_dtypes([
                DType::Float32,
                DType::Float16,
                DType::Bfloat16,
                DType::Int32,
            ])),
            &[crate::compile::nvrtc::arch_option((8, 0))],
        )
        .unwrap();
        if let Err(f) = r {
            panic!("{}", f.log);
        }
    }
}
