// mandelbrot: escape-time iteration count per pixel. Pixel (px, py) maps to
// c = (x_min + px*(x_max-x_min)/width, y_min + py*(y_max-y_min)/height); z starts at 0 and
// z = z^2 + c is iterated until |z|^2 > 4 or max_iter iterations; output[py*width+px] = count.
// Launch: 2-D grid, block (16,16,1) by default, grid = (ceil(width/bx), ceil(height/by)).
// Naive: one thread per pixel, float arithmetic, no early-exit tricks (cardioid/bulb tests),
// heavy warp divergence near the set boundary.
extern "C" __global__ void mandelbrot(int* output, int width, int height,
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
