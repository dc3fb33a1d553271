// matrixMultiply: C = A * B for row-major float matrices.
// A is A_height x A_width, B is A_width x B_width, C is A_height x B_width.
// Thread (x, y) computes C[y][x]; the block shape is the tunable block_size_x x block_size_y (the code reads
// blockDim, so only the launch changes).
extern "C" __global__ void matrixMultiply(const float* A, const float* B, float* C,
                                          int A_width, int A_height, int B_width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < A_height && col < B_width) {
        float sum = 0.0f;
        for (int k = 0; k < A_width; ++k) {
            sum += A[row * A_width + k] * B[k * B_width + col];
        }
        C[row * B_width + col] = sum;
    }
}
