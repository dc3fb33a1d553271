// histogram: 256-bin histogram of n bytes: bins[v] += number of i with data[i] == v.
// bins must be zeroed before the launch (the kernel accumulates).
// Launch: 1-D, block 256 by default, grid = ceil(n/256); one thread per byte.
// Naive: every byte does one atomicAdd on global memory, so all threads contend for the same 256
// counters (no per-block shared-memory privatisation, one byte per thread).
extern "C" __global__ void histogram(const unsigned char* data, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[data[i]], 1u);
    }
}
