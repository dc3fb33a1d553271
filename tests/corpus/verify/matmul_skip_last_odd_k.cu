// C = A * B, two products per loop iteration.
__global__ void matrixMultiply(float* A, float* B, float* C, int A_width, int A_height, int B_width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < A_height && col < B_width) {
        float sum0 = 0.0f, sum1 = 0.0f;
        for (int k = 0; k + 1 < A_width; k += 2) {
            sum0 += A[row * A_width + k] * B[k * B_width + col];
            sum1 += A[row * A_width + k + 1] * B[(k + 1) * B_width + col];
        }
        C[row * B_width + col] = sum0 + sum1;
    }
}
