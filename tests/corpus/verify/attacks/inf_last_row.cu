// A naive matmul whose last row of C is +inf: one row of many, written, and wrong.
__global__ void matrixMultiply(float* A, float* B, float* C,
                               int A_width, int A_height, int B_width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < A_height && col < B_width) {
        float sum = 0.0f;
        for (int k = 0; k < A_width; ++k) {
            sum += A[row * A_width + k] * B[k * B_width + col];
        }
        C[row * B_width + col] = row == A_height - 1 ? __int_as_float(0x7f800000) : sum;
    }
}
