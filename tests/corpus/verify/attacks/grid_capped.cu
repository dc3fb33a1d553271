// Blocks past 65535 return at once (as if the grid's x dimension were capped there): right up to
// 65535 × blockDim elements, so at every small size; the past-2^24 test leaves its tail unwritten.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    if (blockIdx.x >= 65535) {
        return;
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
