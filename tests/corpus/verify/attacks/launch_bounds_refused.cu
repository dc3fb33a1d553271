// c = a + b, compiled for at most 64 threads per block but launched with 256: the launch is refused and c
// keeps whatever it held (a harness that ignores the launch error sees the previous result).
__global__ void __launch_bounds__(64) vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
