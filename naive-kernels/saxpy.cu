// saxpy: y[i] = a * x[i] + y[i] for n floats (y is read and written in place).
// Launch: 1-D, block 256 by default, grid = ceil(n/256); one thread per element.
// Naive: scalar loads/stores, no vectorisation; purely memory bound.
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
