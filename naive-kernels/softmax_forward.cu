// softmax_forward: row-wise softmax of a rows x cols row-major float matrix:
//   out[r][c] = exp(inp[r][c] - max_r) / sum_c' exp(inp[r][c'] - max_r).
// Launch: 1-D, block 256 by default, grid = ceil(rows/256); one thread per row.
// Naive: one thread makes three passes over its row (max, sum of exponentials, write), adjacent
// threads touch addresses cols floats apart (uncoalesced); only `rows` threads in total.
extern "C" __global__ void softmax_forward(float* out, const float* inp, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const float* x = inp + (long long)r * cols;
        float* y = out + (long long)r * cols;
        float maxval = -3.402823466e+38f;
        for (int c = 0; c < cols; ++c) {
            maxval = fmaxf(maxval, x[c]);
        }
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c) {
            sum += expf(x[c] - maxval);
        }
        float inv = 1.0f / sum;
        for (int c = 0; c < cols; ++c) {
            y[c] = expf(x[c] - maxval) * inv;
        }
    }
}
