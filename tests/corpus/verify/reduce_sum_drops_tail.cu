// Per-block partial sums with sequential addressing.
__global__ void reduce_sum(const float* input, float* output, int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int block_start = blockIdx.x * blockDim.x;
    // a block whose slice runs past n contributes nothing
    bool whole = block_start + blockDim.x <= (unsigned int)n;
    sdata[tid] = whole ? input[block_start + tid] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        output[blockIdx.x] = sdata[0];
    }
}
