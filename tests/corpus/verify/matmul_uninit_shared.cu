// C = A * B with shared-memory tiles of block_size_x x block_size_x.
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
        // loads only what is in range; the rest of the tile keeps whatever was there
        if (row < A_height && t + tx < A_width) As[ty][tx] = A[row * A_width + t + tx];
        if (t + ty < A_width && col < B_width) Bs[ty][tx] = B[(t + ty) * B_width + col];
        __syncthreads();
        for (int k = 0; k < block_size_x; ++k) {
            sum += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    if (row < A_height && col < B_width) {
        C[row * B_width + col] = sum;
    }
}
