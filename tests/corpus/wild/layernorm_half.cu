#include "common.h"

// One warp per row of C channels.
__global__ void layernorm_forward_kernel(floatX* __restrict__ out, float* __restrict__ mean,
                                         float* __restrict__ rstd, const floatX* __restrict__ inp,
                                         const floatX* __restrict__ weight,
                                         const floatX* __restrict__ bias, int N, int C) {
    int lane = threadIdx.x % WARP_SIZE;
    int row = blockIdx.x * (blockDim.x / WARP_SIZE) + threadIdx.x / WARP_SIZE;
    if (row >= N) {
        return;
    }
    const floatX* x = inp + (size_t)row * C;
    float sum = 0.0f;
    for (int i = lane; i < C; i += WARP_SIZE) {
        sum += __half2float(x[i]);
    }
    float m = warp_sum(sum) / C;
    float var = 0.0f;
    for (int i = lane; i < C; i += WARP_SIZE) {
        float d = __half2float(x[i]) - m;
        var += d * d;
    }
    float s = rsqrtf(warp_sum(var) / C + 1e-5f);
    floatX* o = out + (size_t)row * C;
    for (int i = lane; i < C; i += WARP_SIZE) {
        float n = (__half2float(x[i]) - m) * s;
        o[i] = __float2half(n * __half2float(weight[i]) + __half2float(bias[i]));
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}
