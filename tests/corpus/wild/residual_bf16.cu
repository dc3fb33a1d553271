#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

// out = inp1 + inp2 in bfloat16, accumulated in float.
__global__ void residual_forward_bf16(bf16* out, const bf16* inp1, const bf16* inp2, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        out[idx] = __float2bfloat16(__bfloat162float(inp1[idx]) + __bfloat162float(inp2[idx]));
    }
}
