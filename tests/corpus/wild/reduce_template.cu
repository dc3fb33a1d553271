// Sum of n floats into *g_odata (zeroed by the caller): each block adds its sum; the block size is a template
// parameter.
template <unsigned int blockSize>
__global__ void reduce_template(const float* g_idata, float* g_odata, unsigned int n) {
    __shared__ float sdata[blockSize];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockSize + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0.0f;
    __syncthreads();
#pragma unroll
    for (unsigned int s = blockSize / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        atomicAdd(g_odata, sdata[0]);
    }
}
