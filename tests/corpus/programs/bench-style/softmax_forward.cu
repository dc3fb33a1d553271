// Row softmax, three versions; `./softmax_forward` checks each against the CPU and times it.
#include <math.h>
#include <float.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include "common.h"

namespace cg = cooperative_groups;

// version 1: one thread per row
__global__ void softmax_forward_kernel1(float* out, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        const float* x = inp + i * C;
        float maxval = -FLT_MAX;
        for (int j = 0; j < C; j++) maxval = fmaxf(maxval, x[j]);
        float sum = 0.0f;
        for (int j = 0; j < C; j++) sum += expf(x[j] - maxval);
        for (int j = 0; j < C; j++) out[i * C + j] = expf(x[j] - maxval) / sum;
    }
}

// version 2: one block per row, tree reductions in shared memory (blockDim.x floats of dynamic smem)
__global__ void softmax_forward_kernel2(float* out, const float* inp, int N, int C)
{
    extern __shared__ float shared[];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    const float* x = inp + row * C;
    float maxval = -FLT_MAX;
    for (int j = tid; j < C; j += blockDim.x) maxval = fmaxf(maxval, x[j]);
    shared[tid] = maxval;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 1; stride /= 2) {
        if (tid < stride) shared[tid] = fmaxf(shared[tid], shared[tid + stride]);
        __syncthreads();
    }
    float offset = shared[0];
    __syncthreads();
    float sum = 0.0f;
    for (int j = tid; j < C; j += blockDim.x) sum += expf(x[j] - offset);
    shared[tid] = sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 1; stride /= 2) {
        if (tid < stride) shared[tid] += shared[tid + stride];
        __syncthreads();
    }
    float total = shared[0];
    for (int j = tid; j < C; j += blockDim.x) out[row * C + j] = expf(x[j] - offset) / total;
}

// version 3: one warp per row, cooperative-groups reductions
__global__ void softmax_forward_kernel3(float* out, const float* inp, int N, int C)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= N) return;
    const float* x = inp + row * C;
    float maxval = -FLT_MAX;
    for (int j = warp.thread_rank(); j < C; j += warp.size()) maxval = fmaxf(maxval, x[j]);
    maxval = cg::reduce(warp, maxval, cg::greater<float>());
    float sum = 0.0f;
    for (int j = warp.thread_rank(); j < C; j += warp.size()) sum += expf(x[j] - maxval);
    sum = cg::reduce(warp, sum, cg::plus<float>());
    for (int j = warp.thread_rank(); j < C; j += warp.size()) out[row * C + j] = expf(x[j] - maxval) / sum;
}

static void softmax_cpu(float* out, const float* inp, int N, int C)
{
    for (int i = 0; i < N; i++) {
        float maxval = -FLT_MAX;
        for (int j = 0; j < C; j++) maxval = fmaxf(maxval, inp[i * C + j]);
        double sum = 0.0;
        for (int j = 0; j < C; j++) sum += exp(inp[i * C + j] - maxval);
        for (int j = 0; j < C; j++) out[i * C + j] = (float)(exp(inp[i * C + j] - maxval) / sum);
    }
}

int main(int argc, char** argv)
{
    int version = argc > 1 ? atoi(argv[1]) : 1;
    int N = 8 * 1024, C = 1024;
    size_t bytes = (size_t)N * C * sizeof(float);
    float* inp = (float*)malloc(bytes);
    float* out = (float*)malloc(bytes);
    float* expected = (float*)malloc(bytes);
    for (size_t i = 0; i < (size_t)N * C; i++) inp[i] = random_float();
    softmax_cpu(expected, inp, N, C);

    float *d_inp, *d_out;
    CUDA_CHECK(cudaMalloc(&d_inp, bytes));
    CUDA_CHECK(cudaMalloc(&d_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_inp, inp, bytes, cudaMemcpyHostToDevice));

    int block = 256;
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start));
    switch (version) {
    case 1: softmax_forward_kernel1<<<ceil_div(N, block), block>>>(d_out, d_inp, N, C); break;
    case 2: softmax_forward_kernel2<<<N, block, block * sizeof(float)>>>(d_out, d_inp, N, C); break;
    case 3: softmax_forward_kernel3<<<ceil_div(N * 32, block), block>>>(d_out, d_inp, N, C); break;
    default: fprintf(stderr, "unknown version %d\n", version); return 1;
    }
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));

    int bad = 0;
    for (size_t i = 0; i < (size_t)N * C; i++) {
        if (fabsf(out[i] - expected[i]) > 1e-5f + 1e-4f * fabsf(expected[i])) bad++;
    }
    printf("version %d: %.3f ms, %s\n", version, ms, bad ? "WRONG" : "ok");
    CUDA_CHECK(cudaFree(d_inp));
    CUDA_CHECK(cudaFree(d_out));
    free(inp); free(out); free(expected);
    return bad ? 1 : 0;
}
