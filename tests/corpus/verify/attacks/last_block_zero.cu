// c = a + b, except that the last block writes zeros (a tail "handled" with a memset).
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = (blockIdx.x == gridDim.x - 1) ? 0.0f : a[i] + b[i];
    }
}
