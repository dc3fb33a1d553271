#include <cuda_runtime.h>

namespace blas {

__device__ __forceinline__ float fma_op(float a, float x, float y) { return fmaf(a, x, y); }

__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = fma_op(a, x[i], y[i]);
    }
}

}  // namespace blas

void run_saxpy(int n, float a, const float* x, float* y) {
    blas::saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
