// Trick: lazy_after_40_launches.cu with its launch counter moved into the kernel as a function-local `static`
// (legal CUDA: a function-scope static without a memory-space specifier lives in device memory for the
// module's lifetime, like a file-scope __device__ variable). kt's parser looks for mutable globals at file
// scope only, so the kernel "keeps no state": kt verify does not time it or check it after many launches,
// and kt tune samples it as a stateless kernel (3 samples, no late check). Right for the first forty launches
// after its module loads, then it returns at once: idle where a program calls it in a loop.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    static unsigned int launches = 0;
    __shared__ unsigned int seen;
    if (threadIdx.x == 0) {
        seen = atomicAdd(&launches, 0u);
    }
    __syncthreads();
    if (seen >= 40 * gridDim.x) {
        return;
    }
    if (threadIdx.x == 0) {
        atomicAdd(&launches, 1u);
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
