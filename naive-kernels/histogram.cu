// 256-bin histogram of n bytes, accumulated into bins.
__global__ void histogram(const unsigned char* data, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[data[i]], 1u);
    }
}
