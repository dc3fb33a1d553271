// matrixMultiply: C = A * B for row-major float matrices (A: A_height x A_width, B: A_width x B_width).
// Shared-memory tiling: the block's threads load a block_size_y x tile_size_k slice of A and a
// tile_size_k x block_size_x slice of B cooperatively (coalesced, zero outside the matrices), then every
// thread accumulates its element of C from shared memory. Each element is still summed in k order.
extern "C" __global__ void matrixMultiply(const float* A, const float* B, float* C,
                                          int A_width, int A_height, int B_width)
{
    __shared__ float As[block_size_y][tile_size_k];
    __shared__ float Bs[tile_size_k][block_size_x];
    constexpr int THREADS = block_size_x * block_size_y;

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * block_size_x + tx;
    const int row0 = blockIdx.y * block_size_y;
    const int col0 = blockIdx.x * block_size_x;
    const int row = row0 + ty;
    const int col = col0 + tx;

    float sum = 0.0f;
    for (int k0 = 0; k0 < A_width; k0 += tile_size_k) {
        for (int e = tid; e < block_size_y * tile_size_k; e += THREADS) {
            const int r = e / tile_size_k;
            const int c = e % tile_size_k;
            const int gr = row0 + r;
            const int gc = k0 + c;
            As[r][c] = (gr < A_height && gc < A_width) ? A[(size_t)gr * A_width + gc] : 0.0f;
        }
        for (int e = tid; e < tile_size_k * block_size_x; e += THREADS) {
            const int r = e / block_size_x;
            const int c = e % block_size_x;
            const int gr = k0 + r;
            const int gc = col0 + c;
            Bs[r][c] = (gr < A_width && gc < B_width) ? B[(size_t)gr * B_width + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < tile_size_k; ++k) {
            sum += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    if (row < A_height && col < B_width) {
        C[(size_t)row * B_width + col] = sum;
    }
}
