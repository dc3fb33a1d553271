// vectorAdd: c[i] = a[i] + b[i] for n floats; the smallest smoke test of the suite.
// Launch: 1-D, block 256 by default, grid = ceil(n/256); one thread per element.
// Naive: scalar loads/stores, no vectorisation; purely memory bound.
extern "C" __global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
