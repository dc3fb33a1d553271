// Mandelbrot escape-time iteration count for each pixel of a width x height view of [x_min,x_max] x [y_min,y_max].
__global__ void mandelbrot(int* output, int width, int height,
                           float x_min, float x_max, float y_min, float y_max, int max_iter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px < width && py < height) {
        float cx = x_min + px * ((x_max - x_min) / width);
        float cy = y_min + py * ((y_max - y_min) / height);
        float zx = 0.0f;
        float zy = 0.0f;
        int iter = 0;
        while (iter < max_iter && zx * zx + zy * zy <= 4.0f) {
            float tmp = zx * zx - zy * zy + cx;
            zy = 2.0f * zx * zy + cy;
            zx = tmp;
            ++iter;
        }
        output[py * width + px] = iter;
    }
}
