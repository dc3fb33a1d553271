// sigmoidActivation with a tunable vector width (1, 2 or 4 floats per access) and elements per thread.
// Same arguments and results as naive-kernels/sigmoidActivation.cu.
// Launch (kt-tuner): grid_div_x = block_size_x, vector_width, work_per_thread.
__device__ __forceinline__ float sig(float v) { return 1.0f / (1.0f + expf(-v)); }

extern "C" __global__ void sigmoidActivation(const float* __restrict__ in, float* __restrict__ out, int n)
{
    const size_t base = ((size_t)blockIdx.x * block_size_x * work_per_thread) * vector_width + threadIdx.x * vector_width;
#pragma unroll
    for (int w = 0; w < work_per_thread; w++) {
        const size_t i = base + (size_t)w * block_size_x * vector_width;
        if (vector_width == 4 && i + 3 < (size_t)n) {
            float4 v = *reinterpret_cast<const float4*>(in + i);
            *reinterpret_cast<float4*>(out + i) = make_float4(sig(v.x), sig(v.y), sig(v.z), sig(v.w));
        } else if (vector_width == 2 && i + 1 < (size_t)n) {
            float2 v = *reinterpret_cast<const float2*>(in + i);
            *reinterpret_cast<float2*>(out + i) = make_float2(sig(v.x), sig(v.y));
        } else {
            for (int v = 0; v < vector_width && i + v < (size_t)n; v++) out[i + v] = sig(in[i + v]);
        }
    }
}
