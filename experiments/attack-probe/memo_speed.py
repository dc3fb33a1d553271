#!/usr/bin/env python3
"""How fast a memoised c = a + b can be on this GPU, outside kt (issue 48: an attack must really beat the
memory floor before kt's refusal of it means anything).

    python3 experiments/attack-probe/memo_speed.py [N]

Times, with cupy events, L2 flushed and c poisoned before every launch (as kt samples a kernel with state),
the median of 20 launches of: the honest add (12 bytes an element), a plain copy (8), and memoised variants
whose hit path copies a kept sum (8 + a per-block key). Prints ms and the bandwidth each would claim for
12 bytes an element."""
import sys
import cupy as cp

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 26
SRC = r'''
#define CACHED (1 << 27)
#define KEYS (1 << 22)
__device__ float memo[CACHED];
__device__ unsigned long long memo_a[KEYS];
__device__ unsigned long long memo_b[KEYS];
__device__ int memo_n[KEYS];
extern "C" __global__ void honest(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void copy(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}
// key read by thread 0, shared through __syncthreads (the attack as it was)
extern "C" __global__ void memo_shared_key(const float* a, const float* b, float* c, int n) {
    __shared__ bool hit;
    unsigned int blk = blockIdx.x;
    if (threadIdx.x == 0) hit = memo_a[blk] == (unsigned long long)a && memo_b[blk] == (unsigned long long)b && memo_n[blk] == n;
    __syncthreads();
    int i = blk * blockDim.x + threadIdx.x;
    if (i < n) { if (hit) c[i] = memo[i]; else { float s = a[i] + b[i]; memo[i] = s; c[i] = s; } }
    __syncthreads();
    if (!hit && threadIdx.x == 0) { __threadfence(); memo_a[blk] = (unsigned long long)a; memo_b[blk] = (unsigned long long)b; memo_n[blk] = n; }
}
// every thread loads the key and its kept sum together, volatile
extern "C" __global__ void memo_volatile(const float* a, const float* b, float* c, int n) {
    unsigned int blk = blockIdx.x;
    int i = blk * blockDim.x + threadIdx.x;
    unsigned long long ka = ((volatile unsigned long long*)memo_a)[blk];
    unsigned long long kb = ((volatile unsigned long long*)memo_b)[blk];
    int kn = ((volatile int*)memo_n)[blk];
    float kept = i < n ? ((volatile float*)memo)[i] : 0.0f;
    bool hit = ka == (unsigned long long)a && kb == (unsigned long long)b && kn == n;
    if (hit) { if (i < n) c[i] = kept; return; }
    if (i < n) { float s = a[i] + b[i]; memo[i] = s; c[i] = s; }
    __syncthreads();
    if (threadIdx.x == 0) { __threadfence(); memo_a[blk] = (unsigned long long)a; memo_b[blk] = (unsigned long long)b; memo_n[blk] = n; }
}
// the same with plain loads (the compiler may move the kept sum's load into the hit branch)
extern "C" __global__ void memo_plain(const float* a, const float* b, float* c, int n) {
    unsigned int blk = blockIdx.x;
    int i = blk * blockDim.x + threadIdx.x;
    unsigned long long ka = memo_a[blk], kb = memo_b[blk];
    int kn = memo_n[blk];
    bool hit = ka == (unsigned long long)a && kb == (unsigned long long)b && kn == n;
    if (hit) { if (i < n) c[i] = __ldg(&memo[i]); return; }
    if (i < n) { float s = a[i] + b[i]; memo[i] = s; c[i] = s; }
    __syncthreads();
    if (threadIdx.x == 0) { __threadfence(); memo_a[blk] = (unsigned long long)a; memo_b[blk] = (unsigned long long)b; memo_n[blk] = n; }
}
// a launch-wide key in one word: one broadcast load per warp, no per-block key
__device__ unsigned long long launch_key;
extern "C" __global__ void memo_one_key(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long want = (unsigned long long)a ^ ((unsigned long long)b << 1) ^ (unsigned long long)n;
    bool hit = __ldg(&launch_key) == want;
    if (i >= n) return;
    if (hit) { c[i] = __ldg(&memo[i]); return; }
    float s = a[i] + b[i]; memo[i] = s; c[i] = s;
    if (i == 0) launch_key = want;  // a benign race: the next launch reads it
}
'''
mod = cp.RawModule(code=SRC, options=("-std=c++17",))
a = cp.random.standard_normal(N, dtype=cp.float32)
b = cp.random.standard_normal(N, dtype=cp.float32)
c = cp.empty(N, dtype=cp.float32)
flush = cp.empty(2 * 64 << 20, dtype=cp.uint8)
e0, e1 = cp.cuda.Event(), cp.cuda.Event()
block = 256
grid = (N + block - 1) // block
want = a + b
for name in ["honest", "copy", "memo_shared_key", "memo_volatile", "memo_plain", "memo_one_key"]:
    f = mod.get_function(name)
    times = []
    for r in range(22):
        c.fill(cp.nan)
        flush.fill(r & 0xff)
        e0.record()
        f((grid,), (block,), (a, b, c, cp.int32(N)))
        e1.record()
        e1.synchronize()
        if r >= 2:
            times.append(cp.cuda.get_elapsed_time(e0, e1))
    times.sort()
    ms = times[len(times) // 2]
    right = name == "copy" or bool(cp.allclose(c, want))
    print(f"{name:16s} {ms:.4f} ms  {12 * N / ms / 1e6:8.0f} GB/s claimed for 12 B/element  right={right}")
