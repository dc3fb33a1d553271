// A naive matmul for capture-ncu.sh and kt-profile's GPU test: one thread per output element.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void matmul(const float *a, const float *b, float *c, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
        c[row * n + col] = sum;
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *a, *b, *c;
    if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes) || cudaMalloc(&c, bytes)) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
    cudaMemset(a, 0, bytes); cudaMemset(b, 0, bytes);
    dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
    for (int i = 0; i < 2; ++i) matmul<<<grid, block>>>(a, b, c, n);
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) { fprintf(stderr, "matmul: %s\n", cudaGetErrorString(err)); return 1; }
    printf("matmul n=%d done\n", n);
    return 0;
}
