// Right everywhere but one element in the middle, which is NaN: a NaN never passes against a number.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = i == n / 2 ? __int_as_float(0x7fc00000) : a[i] + b[i];
    }
}
