// GELU (tanh approximation) on bfloat16 data, two versions; `./gelu_forward V` checks and times version V.
#include <math.h>
#include "common.h"

#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)

// version 1: one element per thread
__global__ void gelu_forward_kernel1(floatX* out, const floatX* inp, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = __bfloat162float(inp[i]);
        float cube = 0.044715f * x * x * x;
        out[i] = __float2bfloat16(0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube))));
    }
}

// version 2: 16 bytes per thread, scalar tail
__device__ inline floatX gelu_one(floatX v)
{
    float x = __bfloat162float(v);
    float cube = 0.044715f * x * x * x;
    return __float2bfloat16(0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube))));
}

__global__ void gelu_forward_kernel2(floatX* out, const floatX* inp, int N)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * Pack128<floatX>::size;
    if (i + Pack128<floatX>::size <= N) {
        Pack128<floatX> packed_out;
        Pack128<floatX> packed_inp = load128(inp + i);
        for (int k = 0; k < Pack128<floatX>::size; ++k) {
            packed_out.v[k] = gelu_one(packed_inp.v[k]);
        }
        store128(out + i, packed_out);
    } else {
        for (; i < N; ++i) out[i] = gelu_one(inp[i]);
    }
}

int main(int argc, char** argv)
{
    int version = argc > 1 ? atoi(argv[1]) : 1;
    int N = 1 << 24;
    floatX* inp = (floatX*)malloc(N * sizeof(floatX));
    floatX* out = (floatX*)malloc(N * sizeof(floatX));
    for (int i = 0; i < N; i++) inp[i] = __float2bfloat16(random_float() * 4.0f);
    floatX *d_inp, *d_out;
    CUDA_CHECK(cudaMalloc(&d_inp, N * sizeof(floatX)));
    CUDA_CHECK(cudaMalloc(&d_out, N * sizeof(floatX)));
    CUDA_CHECK(cudaMemcpy(d_inp, inp, N * sizeof(floatX), cudaMemcpyHostToDevice));
    int block = 128;
    if (version == 1) {
        gelu_forward_kernel1<<<ceil_div(N, block), block>>>(d_out, d_inp, N);
    } else {
        gelu_forward_kernel2<<<ceil_div(N, block * Pack128<floatX>::size), block>>>(d_out, d_inp, N);
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(out, d_out, N * sizeof(floatX), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float x = __bfloat162float(inp[i]);
        float want = 0.5f * x * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (x + 0.044715f * x * x * x)));
        if (fabsf(__bfloat162float(out[i]) - want) > 2e-2f * (1.0f + fabsf(want))) bad++;
    }
    printf("version %d: %s\n", version, bad ? "WRONG" : "ok");
    CUDA_CHECK(cudaFree(d_inp));
    CUDA_CHECK(cudaFree(d_out));
    free(inp); free(out);
    return bad ? 1 : 0;
}
