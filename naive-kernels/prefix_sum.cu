// Inclusive prefix sum: output[i] = input[0] + ... + input[i].
__global__ void prefix_sum(const float* input, float* output, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float sum = 0.0f;
        for (int j = 0; j <= i; ++j) {
            sum += input[j];
        }
        output[i] = sum;
    }
}
