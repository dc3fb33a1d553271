// Sigmoid: out[i] = 1 / (1 + exp(-in[i])).
__global__ void sigmoidActivation(float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = 1.0f / (1.0f + expf(-in[i]));
    }
}
