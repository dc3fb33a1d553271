#include "common.h"

#define GELU_SCALE 0.7978845608f

__global__ void gelu_forward_kernel(floatX* out, const floatX* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = __half2float(inp[i]);
        float cube = 0.044715f * x * x * x;
        out[i] = __float2half(0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + cube))));
    }
}

void gelu_forward(floatX* out, const floatX* inp, int N, int block_size) {
    int grid_size = ceil_div(N, block_size);
    gelu_forward_kernel<<<grid_size, block_size>>>(out, inp, N);
    CUDA_CHECK(cudaGetLastError());
}
