#!/usr/bin/env python3
"""Writes the Stage 3 answers of experiments/scripted/vectorAdd.toml and matrixAdd.toml.

Everything above the `# --- Stage 3` marker (Stages 1 and 2) is kept; everything below is regenerated:
    python3 experiments/scripted/make_stage3.py

One answer file per kernel serves all three strategies, because a call takes the next unused answer of its node
and each cell is a fresh process. The node orders line up like this:
  one-prompt:  apply 1, restrictions 1
  explicit:    apply 1 (block_size step), restrictions 1, then one worth_it per later step in strategies/explicit.toml
               order; only loop_unrolling is judged worth it, so it gets apply 2 and restrictions 2
  autonomous:  plan (2 steps), validate, breakdown, apply 1, restrictions 1, validate, breakdown, apply 2,
               restrictions 2, replan (empty: nothing more to do)
Apply 1 is the complete tunable rewrite (vectorised loads and stores, several vectors per thread, tunable block);
apply 2 builds on it and issues all of a thread's loads before its adds and stores.
"""
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
MARKER = "# --- Stage 3"

VEC_TYPES = r"""// vector_width floats move as one load/store (the buffers kt allocates are 256-byte aligned).
#if vector_width == 4
typedef float4 vec_t;
__device__ __forceinline__ vec_t vadd(vec_t x, vec_t y) { return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }
#elif vector_width == 2
typedef float2 vec_t;
__device__ __forceinline__ vec_t vadd(vec_t x, vec_t y) { return make_float2(x.x + y.x, x.y + y.y); }
#else
typedef float vec_t;
__device__ __forceinline__ vec_t vadd(vec_t x, vec_t y) { return x + y; }
#endif
"""

VECTOR_ADD_1 = VEC_TYPES + r"""
// vectorAdd: c[i] = a[i] + b[i] for n floats.
// Each thread adds work_per_thread_x vectors of vector_width floats; the vectors of one block are
// block_size_x apart so every load and store of a warp is coalesced. Grid: n / (block_size_x *
// work_per_thread_x * vector_width) blocks (grid divisors). The n % vector_width trailing floats are
// added one by one by the first threads of block 0.
extern "C" __global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    const int nvec = n / vector_width;
    const vec_t* av = reinterpret_cast<const vec_t*>(a);
    const vec_t* bv = reinterpret_cast<const vec_t*>(b);
    vec_t* cv = reinterpret_cast<vec_t*>(c);
    int v = blockIdx.x * (block_size_x * work_per_thread_x) + threadIdx.x;
#pragma unroll
    for (int k = 0; k < work_per_thread_x; k++) {
        if (v < nvec) {
            cv[v] = vadd(av[v], bv[v]);
        }
        v += block_size_x;
    }
    const int tail = n - nvec * vector_width;
    if (blockIdx.x == 0 && (int)threadIdx.x < tail) {
        const int i = nvec * vector_width + threadIdx.x;
        c[i] = a[i] + b[i];
    }
}
"""

VECTOR_ADD_2 = VEC_TYPES + r"""
// vectorAdd: c[i] = a[i] + b[i] for n floats.
// As before (work_per_thread_x vectors of vector_width floats per thread, block_size_x apart, grid divisors
// block_size_x * work_per_thread_x * vector_width, scalar tail in block 0), but each thread first loads all
// its vectors into registers, then adds and stores them: up to 2 * work_per_thread_x independent loads are in
// flight per thread instead of two.
extern "C" __global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    const int nvec = n / vector_width;
    const vec_t* av = reinterpret_cast<const vec_t*>(a);
    const vec_t* bv = reinterpret_cast<const vec_t*>(b);
    vec_t* cv = reinterpret_cast<vec_t*>(c);
    const int first = blockIdx.x * (block_size_x * work_per_thread_x) + threadIdx.x;
    vec_t ra[work_per_thread_x];
    vec_t rb[work_per_thread_x];
#pragma unroll
    for (int k = 0; k < work_per_thread_x; k++) {
        const int v = first + k * block_size_x;
        if (v < nvec) {
            ra[k] = av[v];
            rb[k] = bv[v];
        }
    }
#pragma unroll
    for (int k = 0; k < work_per_thread_x; k++) {
        const int v = first + k * block_size_x;
        if (v < nvec) {
            cv[v] = vadd(ra[k], rb[k]);
        }
    }
    const int tail = n - nvec * vector_width;
    if (blockIdx.x == 0 && (int)threadIdx.x < tail) {
        const int i = nvec * vector_width + threadIdx.x;
        c[i] = a[i] + b[i];
    }
}
"""

MATRIX_ADD_1 = VEC_TYPES + r"""
// matrixAdd: C = A + B for row-major width x height float matrices.
// 2-D: a block is block_size_x x block_size_y threads; each thread handles work_per_thread_y rows
// (block_size_y apart) and in each row work_per_thread_x vectors of vector_width floats (block_size_x apart,
// so a warp's accesses are coalesced). Grid divisors: x = block_size_x * work_per_thread_x * vector_width,
// y = block_size_y * work_per_thread_y. A row starts at row * width, which is not a multiple of vector_width
// when width is odd, so each row has a scalar head up to the next aligned float, then aligned vectors, then a
// scalar tail; the head and tail (fewer than vector_width floats each) go to the first threads in x.
extern "C" __global__ void matrixAdd(const float* A, const float* B, float* C, int width, int height)
{
    const int col_vec0 = blockIdx.x * (block_size_x * work_per_thread_x) + threadIdx.x;
    int row = blockIdx.y * (block_size_y * work_per_thread_y) + threadIdx.y;
#pragma unroll
    for (int r = 0; r < work_per_thread_y; r++) {
        if (row < height) {
            const int start = row * width;
            const int head = min((vector_width - start % vector_width) % vector_width, width);
            const int nvec = (width - head) / vector_width;
            const vec_t* av = reinterpret_cast<const vec_t*>(A + start + head);
            const vec_t* bv = reinterpret_cast<const vec_t*>(B + start + head);
            vec_t* cv = reinterpret_cast<vec_t*>(C + start + head);
            int v = col_vec0;
#pragma unroll
            for (int k = 0; k < work_per_thread_x; k++) {
                if (v < nvec) {
                    cv[v] = vadd(av[v], bv[v]);
                }
                v += block_size_x;
            }
            if (blockIdx.x == 0) {
                const int tail_start = head + nvec * vector_width;
                const int t = threadIdx.x;
                if (t < head) {
                    C[start + t] = A[start + t] + B[start + t];
                }
                if (t < width - tail_start) {
                    C[start + tail_start + t] = A[start + tail_start + t] + B[start + tail_start + t];
                }
            }
        }
        row += block_size_y;
    }
}
"""

MATRIX_ADD_2 = VEC_TYPES + r"""
// matrixAdd: C = A + B for row-major width x height float matrices.
// As before (block_size_x x block_size_y threads, work_per_thread_y rows and work_per_thread_x aligned vectors
// of vector_width floats per row per thread, scalar head and tail of each row in block column 0), but each
// thread loads all the vectors of a row into registers before adding and storing them, so that more
// independent loads are in flight.
extern "C" __global__ void matrixAdd(const float* A, const float* B, float* C, int width, int height)
{
    const int col_vec0 = blockIdx.x * (block_size_x * work_per_thread_x) + threadIdx.x;
    int row = blockIdx.y * (block_size_y * work_per_thread_y) + threadIdx.y;
#pragma unroll
    for (int r = 0; r < work_per_thread_y; r++) {
        if (row < height) {
            const int start = row * width;
            const int head = min((vector_width - start % vector_width) % vector_width, width);
            const int nvec = (width - head) / vector_width;
            const vec_t* av = reinterpret_cast<const vec_t*>(A + start + head);
            const vec_t* bv = reinterpret_cast<const vec_t*>(B + start + head);
            vec_t* cv = reinterpret_cast<vec_t*>(C + start + head);
            vec_t ra[work_per_thread_x];
            vec_t rb[work_per_thread_x];
#pragma unroll
            for (int k = 0; k < work_per_thread_x; k++) {
                const int v = col_vec0 + k * block_size_x;
                if (v < nvec) {
                    ra[k] = av[v];
                    rb[k] = bv[v];
                }
            }
#pragma unroll
            for (int k = 0; k < work_per_thread_x; k++) {
                const int v = col_vec0 + k * block_size_x;
                if (v < nvec) {
                    cv[v] = vadd(ra[k], rb[k]);
                }
            }
            if (blockIdx.x == 0) {
                const int tail_start = head + nvec * vector_width;
                const int t = threadIdx.x;
                if (t < head) {
                    C[start + t] = A[start + t] + B[start + t];
                }
                if (t < width - tail_start) {
                    C[start + tail_start + t] = A[start + tail_start + t] + B[start + tail_start + t];
                }
            }
        }
        row += block_size_y;
    }
}
"""


def p(name, values):
    return {"name": name, "values": values}


KERNELS = {
    "vectorAdd": {
        "plan": [
            "Vectorise: load and store vector_width floats at once (float4/float2), let each thread handle "
            "work_per_thread_x vectors block_size_x apart (grid divisors), make the block size tunable, and add "
            "the n % vector_width trailing floats in a scalar tail.",
            "Issue all loads of a thread before its adds and stores (register buffering), so that more "
            "independent memory requests are in flight.",
        ],
        "rewrites": [
            (VECTOR_ADD_1,
             [p("block_size_x", [128, 256, 512, 1024]), p("work_per_thread_x", [1, 2, 4, 8]),
              p("vector_width", [1, 2, 4])],
             {"x": ["block_size_x", "work_per_thread_x", "vector_width"]},
             "Each thread adds work_per_thread_x vectors of vector_width floats, block_size_x apart (coalesced); "
             "the grid shrinks by the same factors; a scalar tail covers n % vector_width."),
            (VECTOR_ADD_2,
             [p("block_size_x", [128, 256, 512, 1024]), p("work_per_thread_x", [1, 2, 4, 8]),
              p("vector_width", [1, 2, 4])],
             {"x": ["block_size_x", "work_per_thread_x", "vector_width"]},
             "All of a thread's loads are issued before its adds and stores; the loops over work_per_thread_x "
             "are fully unrolled."),
        ],
        "restrictions": [
            ["work_per_thread_x * vector_width <= 16"],
            ["work_per_thread_x * vector_width <= 16"],
        ],
    },
    "matrixAdd": {
        "plan": [
            "Vectorise each row: aligned float4/float2 loads and stores (tunable vector_width) with a scalar head "
            "and tail per row, several vectors (work_per_thread_x) and rows (work_per_thread_y) per thread with "
            "grid divisors, and a tunable 2-D block size.",
            "Issue all loads of a thread's row before its adds and stores (register buffering), so that more "
            "independent memory requests are in flight.",
        ],
        "rewrites": [
            (MATRIX_ADD_1,
             [p("block_size_x", [64, 128, 256]), p("block_size_y", [1, 2, 4]),
              p("work_per_thread_x", [1, 2]), p("work_per_thread_y", [1, 2, 4]), p("vector_width", [1, 4])],
             {"x": ["block_size_x", "work_per_thread_x", "vector_width"],
              "y": ["block_size_y", "work_per_thread_y"]},
             "A 2-D block of block_size_x x block_size_y threads; each thread covers work_per_thread_y rows and "
             "work_per_thread_x aligned vectors per row, with a scalar head and tail per row."),
            (MATRIX_ADD_2,
             [p("block_size_x", [64, 128, 256]), p("block_size_y", [1, 2, 4]),
              p("work_per_thread_x", [1, 2]), p("work_per_thread_y", [1, 2, 4]), p("vector_width", [1, 4])],
             {"x": ["block_size_x", "work_per_thread_x", "vector_width"],
              "y": ["block_size_y", "work_per_thread_y"]},
             "The vectors of a row are loaded into registers before they are added and stored."),
        ],
        "restrictions": [
            ["block_size_x * block_size_y >= 128", "work_per_thread_x * work_per_thread_y <= 4"],
            ["block_size_x * block_size_y >= 128", "work_per_thread_x * work_per_thread_y <= 4"],
        ],
    },
}

# strategies/explicit.toml after block_size (which is not asked about): only loop_unrolling is worth doing,
# because apply 1 already vectorises, gives each thread several elements at coalesced strides, and the kernel
# reuses no data (no shared memory, prefetching or register tiles).
WORTH_IT = [
    (False, "The kernel already handles work_per_thread_x vectors of vector_width floats per thread."),
    (False, "work_per_thread_x is already a tunable parameter with grid divisors."),
    (False, "A thread's elements are already block_size_x apart, so each warp access is coalesced."),
    (False, "Every input element is read once; there is no reuse for shared memory to exploit."),
    (False, "Without shared-memory tiles there is nothing to prefetch."),
    (False, "An element-wise add has no reuse that register tiles could exploit."),
    (True, "Loading all of a thread's vectors before storing puts more independent loads in flight."),
    (False, "The unrolled loads are already independent; extra accumulators would change nothing."),
]


def toml_text(text):
    assert "'''" not in text
    return "'''" + text + "'''"


def answer(node, obj):
    text = obj if isinstance(obj, str) else json.dumps(obj)
    return f'[[answers]]\nnode = "{node}"\ntext = {toml_text(text)}\n'


def stage3(kernel):
    k = KERNELS[kernel]
    out = [answer("stage3.plan", {"steps": k["plan"]})]
    for i, step in enumerate(k["plan"]):
        out.append(answer("stage3.validate", {"valid": True, "reason": "It changes only the kernel's device code."}))
        out.append(answer("stage3.breakdown", {"substeps": []}))
    for (code, params, divisors, why), restr in zip(k["rewrites"], k["restrictions"]):
        out.append(answer("stage3.apply", {"code": code, "parameters": params, "grid_divisors": divisors,
                                           "explanation": why}))
        out.append(answer("stage3.restrictions", {"restrictions": restr}))
    out.append(answer("stage3.replan", {"steps": []}))
    for worth, why in WORTH_IT:
        out.append(answer("stage3.worth_it", {"worth_it": worth, "reason": why}))
    return "\n".join(out)


def main():
    for kernel in KERNELS:
        path = HERE / f"{kernel}.toml"
        text = path.read_text()
        head = text.split(MARKER)[0].rstrip() + "\n\n"
        path.write_text(head + MARKER + " (generated by make_stage3.py; edit that script, not this part)\n\n"
                        + stage3(kernel))


if __name__ == "__main__":
    main()
