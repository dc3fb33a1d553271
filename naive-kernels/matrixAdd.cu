// matrixAdd: C = A + B for row-major width x height float matrices.
// Launch: 2-D grid, block (16,16,1) by default, grid = (ceil(width/bx), ceil(height/by)).
// Naive: one thread per element, no vectorised loads, no grid-stride loop, fixed block shape.
extern "C" __global__ void matrixAdd(const float* A, const float* B, float* C, int width, int height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < width && row < height) {
        int idx = row * width + col;
        C[idx] = A[idx] + B[idx];
    }
}
