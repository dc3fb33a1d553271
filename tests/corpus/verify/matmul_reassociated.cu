// C = A * B, four partial sums over k.
__global__ void matrixMultiply(float* A, float* B, float* C, int A_width, int A_height, int B_width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < A_height && col < B_width) {
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int k = 0;
        for (; k + 3 < A_width; k += 4) {
            for (int j = 0; j < 4; ++j) {
                s[j] += A[row * A_width + k + j] * B[(k + j) * B_width + col];
            }
        }
        for (; k < A_width; ++k) {
            s[0] += A[row * A_width + k] * B[k * B_width + col];
        }
        C[row * B_width + col] = (s[0] + s[1]) + (s[2] + s[3]);
    }
}
