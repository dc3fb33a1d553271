// Writes a quiet NaN to every element: written (not kt's poison pattern), and never equal to anything.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = __int_as_float(0x7fc00000);
    }
}
