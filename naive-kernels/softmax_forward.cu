// Row-wise softmax of a rows x cols row-major matrix.
__global__ void softmax_forward(float* out, const float* inp, int rows, int cols)
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
