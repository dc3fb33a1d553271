// Per-block partial sums accumulated in half precision: about three decimal digits for sums of 256
// randn values, far outside float32's tolerance.
#include <cuda_fp16.h>
__global__ void reduce_sum(const float* input, float* output, int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < (unsigned int)n) ? input[i] : 0.0f;
    __syncthreads();
    if (tid == 0) {
        __half s = __float2half(0.0f);
        for (unsigned int k = 0; k < blockDim.x; ++k) {
            s = __hadd(s, __float2half(sdata[k]));
        }
        output[blockIdx.x] = __half2float(s);
    }
}
