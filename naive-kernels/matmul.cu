// matrixMultiply: C = A * B for row-major float matrices.
// A is A_height x A_width, B is A_width x B_width, C is A_height x B_width.
// Launch: 2-D grid, block (16,16,1) by default, grid = (ceil(B_width/bx), ceil(A_height/by));
// thread (x, y) computes C[y][x].
// Naive: one thread per output element, every operand read from global memory (no shared-memory
// tiling, no register blocking), so each A and B element is fetched A_height or B_width times.
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
