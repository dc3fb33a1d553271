// Per-block partial sums with the __syncthreads() inside the tree loop left out ("warps run in lockstep"):
// for strides of 32 and more, threads read partial sums other warps have not written yet.
__global__ void reduce_sum(const float* input, float* output, int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < (unsigned int)n) ? input[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            volatile float* v = sdata;
            v[tid] += v[tid + s];
        }
    }
    if (tid == 0) {
        output[blockIdx.x] = sdata[0];
    }
}
