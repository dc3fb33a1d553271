// c = a + b, right, and then the last block traps: the output is complete but the launch failed (the
// asynchronous error surfaces only at the next synchronisation).
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
    __syncthreads();
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
        __threadfence();
        asm volatile("trap;");
    }
}
