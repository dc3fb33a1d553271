// 2-D cross-correlation of a height x width image with a K x K filter, zero padding, same-size output.
__global__ void conv2d(const float* input, const float* kernel, float* output,
                       int width, int height, int K)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        int r = K / 2;
        float sum = 0.0f;
        for (int i = 0; i < K; ++i) {
            int iy = y + i - r;
            for (int j = 0; j < K; ++j) {
                int ix = x + j - r;
                if (iy >= 0 && iy < height && ix >= 0 && ix < width) {
                    sum += input[iy * width + ix] * kernel[i * K + j];
                }
            }
        }
        output[y * width + x] = sum;
    }
}
