// matrixAdd with tunable vector width (float, float2 or float4 per access) and rows per thread, for the
// bandwidth target of the kt-tuner benchmarks. Same arguments and results as naive-kernels/matrixAdd.cu.
// Launch (kt-tuner): grid_div_x = block_size_x, vector_width; grid_div_y = block_size_y, tile_y.
extern "C" __global__ void matrixAdd(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     int width, int height)
{
    const int x = (blockIdx.x * block_size_x + threadIdx.x) * vector_width;
    const int y0 = (blockIdx.y * block_size_y + threadIdx.y) * tile_y;
#pragma unroll
    for (int t = 0; t < tile_y; t++) {
        const int y = y0 + t;
        if (y >= height || x >= width) return;
        const size_t i = (size_t)y * width + x;
        if (vector_width == 4 && x + 3 < width && (width & 3) == 0) {
            float4 a = *reinterpret_cast<const float4*>(A + i);
            float4 b = *reinterpret_cast<const float4*>(B + i);
            *reinterpret_cast<float4*>(C + i) = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
        } else if (vector_width == 2 && x + 1 < width && (width & 1) == 0) {
            float2 a = *reinterpret_cast<const float2*>(A + i);
            float2 b = *reinterpret_cast<const float2*>(B + i);
            *reinterpret_cast<float2*>(C + i) = make_float2(a.x + b.x, a.y + b.y);
        } else {
            for (int v = 0; v < vector_width && x + v < width; v++) C[i + v] = A[i + v] + B[i + v];
        }
    }
}
