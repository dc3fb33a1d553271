// c = a + b with a grid-stride loop and four independent accumulators: a different shape, the same sums.
// Must PASS (a control: the guards, the real sizes and the timed checks reject no honest kernel).
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        c[i] = a[i] + b[i];
    }
}
