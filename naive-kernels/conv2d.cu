// conv2d: single-channel 2-D convolution (cross-correlation, as in CNNs) of a height x width
// row-major image with a K x K filter (K odd), zero padding, output the same size as the input:
//   output[y][x] = sum_{i,j < K} input[y+i-K/2][x+j-K/2] * kernel[i*K + j]   (out-of-range = 0).
// Launch: 2-D grid, block (16,16,1) by default, grid = (ceil(width/bx), ceil(height/by)).
// Naive: one thread per output pixel, every tap re-read from global memory (no shared-memory tile
// with halo, filter not in constant memory, bounds checks inside the inner loop).
extern "C" __global__ void conv2d(const float* input, const float* kernel, float* output,
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
