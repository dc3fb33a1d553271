#!/usr/bin/env python3
"""Which host typedefs and compiler builtins NVRTC knows (issue 44, item 6), probed through cupy's NVRTC.

    python3 experiments/nvrtc-env/probe.py

Each probe is a tiny kernel compiled alone; prints one line per probe: `ok` or NVRTC's first error line.
kt's NVRTC environment (crates/kt-tuner/src/compile/headers.rs) supplies what fails here."""
import cupy

PROBES = {
    "uint": "__global__ void k(unsigned *o) { uint v = 1; o[0] = v; }",
    "ulong": "__global__ void k(unsigned long *o) { ulong v = 1; o[0] = v; }",
    "ushort": "__global__ void k(unsigned short *o) { ushort v = 1; o[0] = v; }",
    "uchar": "__global__ void k(unsigned char *o) { uchar v = 1; o[0] = v; }",
    "__builtin_huge_valf": "__global__ void k(float *o) { o[0] = __builtin_huge_valf(); }",
    "__builtin_huge_val": "__global__ void k(double *o) { o[0] = __builtin_huge_val(); }",
    "__builtin_inff": "__global__ void k(float *o) { o[0] = __builtin_inff(); }",
    "__builtin_nanf": "__global__ void k(float *o) { o[0] = __builtin_nanf(\"\"); }",
    "__builtin_nan": "__global__ void k(double *o) { o[0] = __builtin_nan(\"\"); }",
    "__builtin_huge_valf constexpr": "constexpr float inf = __builtin_huge_valf();\n__global__ void k(float *o) { o[0] = inf; }",
    "__builtin_inff constexpr": "constexpr float inf = __builtin_inff();\n__global__ void k(float *o) { o[0] = inf; }",
    "1.0f/0.0f constexpr": "constexpr float inf = 1.0f / 0.0f;\n__global__ void k(float *o) { o[0] = inf; }",
    "__int_as_float": "__global__ void k(float *o) { o[0] = __int_as_float(0x7f800000); }",
    "CUDART_INF_F (math_constants.h)": "#include <math_constants.h>\n__global__ void k(float *o) { o[0] = CUDART_INF_F; }",
    "__builtin_expect": "__global__ void k(float *o) { if (__builtin_expect(o[0] > 0, 1)) o[0] = 1; }",
    "__builtin_assume": "__global__ void k(float *o, int n) { __builtin_assume(n > 0); o[0] = n; }",
    "__builtin_isnan": "__global__ void k(float *o) { o[0] = __builtin_isnan(o[0]); }",
    "__builtin_isinf": "__global__ void k(float *o) { o[0] = __builtin_isinf(o[0]); }",
    "__builtin_fabsf": "__global__ void k(float *o) { o[0] = __builtin_fabsf(o[0]); }",
    "__builtin_popcount": "__global__ void k(int *o) { o[0] = __builtin_popcount(o[0]); }",
    "size_t": "__global__ void k(size_t *o) { o[0] = sizeof(size_t); }",
    "ptrdiff_t": "__global__ void k(long *o) { ptrdiff_t d = 1; o[0] = d; }",
}

ok = 0
for name, src in PROBES.items():
    try:
        cupy.RawModule(code=src.replace("__global__", 'extern "C" __global__'), backend="nvrtc", options=("-std=c++17",)).get_function("k")
        print(f"{name:36s} ok")
        ok += 1
    except Exception as e:  # cupy's CompileException carries NVRTC's log
        lines = [l.strip() for l in str(e).splitlines() if "error" in l]
        print(f"{name:36s} FAILS: {lines[0] if lines else str(e)[:160]}")
print(f"{ok} of {len(PROBES)} compile under NVRTC ({cupy.cuda.nvrtc.getVersion()})")
