// c = a + b, then a scaled down in place "to reuse its buffer" (a later launch sees other inputs).
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i];
        c[i] = x + b[i];
        ((float*)a)[i] = x * 0.5f;
    }
}
