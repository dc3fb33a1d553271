// prefix_sum: inclusive scan, output[i] = input[0] + ... + input[i], summed left to right.
// Launch: 1-D, block 256 by default, grid = ceil(n/256); one thread per output element.
// Naive: each thread re-sums its whole prefix, O(n^2) total work and a load imbalance of n between
// the first and last thread (no work-efficient Blelloch/decoupled-lookback scan).
extern "C" __global__ void prefix_sum(const float* input, float* output, int n)
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
