// c = a + b, and thread 0 clears a "header" word just before c (a scratch slot it assumed it owned).
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        c[-1] = 0.0f;
    }
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
