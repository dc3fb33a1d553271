// c = a + b, with the bounds check written `<=`: the thread at index n writes one float past the end of c.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        c[i] = (i < n) ? a[i] + b[i] : 0.0f;
    }
}
