// C = A * B with the k loop starting at an offset that moves with every launch (a __device__ counter):
// the rounding differs from launch to launch, within tolerance, and the state it keeps is harmless. Must PASS.
__device__ unsigned int rotation = 0;

__global__ void matrixMultiply(float* A, float* B, float* C,
                               int A_width, int A_height, int B_width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned int start = rotation % (unsigned int)A_width;
    if (row < A_height && col < B_width) {
        float sum = 0.0f;
        for (int j = 0; j < A_width; ++j) {
            int k = (j + start) % A_width;
            sum += A[row * A_width + k] * B[k * B_width + col];
        }
        C[row * B_width + col] = sum;
    }
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
        atomicAdd(&rotation, 1u);
    }
}
