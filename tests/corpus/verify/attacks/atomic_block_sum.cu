// Per-block partial sums by shared-memory atomics: the order of the additions changes from run to run, so
// the last bits of each sum do too, well within the tolerance. Must PASS.
__global__ void reduce_sum(const float* input, float* output, int n)
{
    __shared__ float total;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) {
        total = 0.0f;
    }
    __syncthreads();
    atomicAdd(&total, (i < (unsigned int)n) ? input[i] : 0.0f);
    __syncthreads();
    if (threadIdx.x == 0) {
        output[blockIdx.x] = total;
    }
}
