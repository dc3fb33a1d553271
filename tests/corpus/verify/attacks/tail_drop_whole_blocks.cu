// c = a + b over whole blocks of 256 only: the last n % 256 elements are dropped.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (n & ~255)) {
        c[i] = a[i] + b[i];
    }
}
