// Parallel sum reduction kernels: each block adds the sum of its slice of g_idata to *g_odata (zeroed first).
#ifndef REDUCTION_KERNELS_CUH
#define REDUCTION_KERNELS_CUH
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Dynamic shared memory of blockDim.x floats.
struct SharedFloats {
    __device__ inline operator float*()
    {
        extern __shared__ float __smem[];
        return __smem;
    }
};

// reduce0: interleaved addressing.
__global__ void reduce0(const float* g_idata, float* g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    float* sdata = SharedFloats();
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0.0f;
    cg::sync(cta);
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
        cg::sync(cta);
    }
    if (tid == 0) atomicAdd(g_odata, sdata[0]);
}

// reduce3: sequential addressing, the block size a template parameter; requires blockSize == blockDim.x.
template <unsigned int blockSize>
__global__ void reduce3(const float* g_idata, float* g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    float* sdata = SharedFloats();
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockSize + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0.0f;
    cta.sync();
    for (unsigned int s = blockSize / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        cta.sync();
    }
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    if (cta.thread_rank() < 32) {
        float sum = sdata[tid] + (blockSize >= 64 ? sdata[tid + 32] : 0.0f);
        for (int offset = tile32.size() / 2; offset > 0; offset /= 2) {
            sum += tile32.shfl_down(sum, offset);
        }
        if (tid == 0) atomicAdd(g_odata, sum);
    }
}
#endif
