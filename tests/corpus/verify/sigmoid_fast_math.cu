// out = 1 / (1 + exp(-in)) with the fast intrinsics.
__global__ void sigmoidActivation(float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = __fdividef(1.0f, 1.0f + __expf(-in[i]));
    }
}
