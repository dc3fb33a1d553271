// sigmoidActivation: out[i] = 1 / (1 + exp(-in[i])) for n floats.
// Launch: 1-D, block 256 by default, grid = ceil(n/256).
// Naive: one thread per element, scalar loads/stores, precise expf.
extern "C" __global__ void sigmoidActivation(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = 1.0f / (1.0f + expf(-in[i]));
    }
}
