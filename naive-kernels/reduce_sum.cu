// reduce_sum: per-block partial sums. Block b writes output[b] = sum of input[b*blockDim.x ..
// b*blockDim.x + blockDim.x - 1] (elements past n count as 0). output holds ceil(n/blockDim.x)
// floats; the host (or a second launch) adds the partials.
// Launch: 1-D, block 256 by default (must be a power of two), grid = ceil(n/256), dynamic shared
// memory of blockDim.x floats (blockDim.x * 4 bytes) passed at launch.
// Naive: the textbook "interleaved addressing" baseline: `tid % (2*s) == 0` leaves most lanes of
// every warp idle (divergent warps), the modulo is slow, shared-memory strides cause bank
// conflicts, and half the threads do no adds after the load.
extern "C" __global__ void reduce_sum(const float* input, float* output, int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < (unsigned int)n) ? input[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        output[blockIdx.x] = sdata[0];
    }
}
