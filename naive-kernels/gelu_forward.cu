// gelu_forward: tanh-approximation GELU (as in GPT-2):
//   out[i] = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
// Launch: 1-D, block 256 by default, grid = ceil(n/256); one thread per element.
// Naive: scalar loads/stores, precise tanhf, no vectorisation.
extern "C" __global__ void gelu_forward(float* out, const float* inp, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + cube)));
    }
}
