// C = A * B with the column check written `col <= B_width`: each row's extra thread writes the first element of
// the next row, and the last row's writes one float past the end of C.
__global__ void matrixMultiply(float* A, float* B, float* C,
                               int A_width, int A_height, int B_width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < A_height && col <= B_width) {
        float sum = 0.0f;
        if (col < B_width) {
            for (int k = 0; k < A_width; ++k) {
                sum += A[row * A_width + k] * B[k * B_width + col];
            }
            C[row * B_width + col] = sum;
        } else if (row == A_height - 1) {
            C[row * B_width + col] = sum;
        }
    }
}
