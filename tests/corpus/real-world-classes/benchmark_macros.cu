// Written for kt's tests in the style of benchmark suites (SHOC's MaxFlops, the CUDA samples' transpose):
// statement macros used with no semicolon, the C++17-removed `register`, a value of a template type, a
// header the configure step would generate (included from a header), a header only an #ifdef opens, a
// system header written with quotes, and a transpose whose blocks cover 32 rows with 8 rows of threads.
#include "cuda.h"
#include "bench_timer.h"
#ifdef WITH_COUNTERS
#include "counters.list"
#endif

#define TILE_DIM 32
#define BLOCK_ROWS 8

#define MADD_OP s = v1 - s * v2;
#define MADD_OP4 MADD_OP MADD_OP \
                 MADD_OP MADD_OP
#define MADD_BLOCK { MADD_OP4 MADD_OP4 }

template <class T>
__global__ void madd(T *data, int iters, T v1, T v2)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    register T s = data[gid];
    for (int j = 0; j < iters; ++j) {
        MADD_OP4 MADD_OP4
        MADD_BLOCK;
    }
    data[gid] = s;
}

__global__ void transpose_rows(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (x < width && y + j < height) {
            out[x * height + y + j] = in[(y + j) * width + x];
        }
    }
}
