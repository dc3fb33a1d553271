// Matrix transpose, naive and through a shared-memory tile; each block moves a TILE_DIM x TILE_DIM tile
// with TILE_DIM x BLOCK_ROWS threads.
#include <cstdio>
#include "check_helpers.h"

#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transposeNaive(float* odata, const float* idata, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (x < width && y + j < height) odata[x * height + (y + j)] = idata[(y + j) * width + x];
    }
}

__global__ void transposeCoalesced(float* odata, const float* idata, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

int main()
{
    const int width = 4096, height = 4096;
    size_t bytes = (size_t)width * height * sizeof(float);
    float *d_in, *d_out;
    checkCudaErrors(cudaMalloc(&d_in, bytes));
    checkCudaErrors(cudaMalloc(&d_out, bytes));
    dim3 grid(width / TILE_DIM, height / TILE_DIM), threads(TILE_DIM, BLOCK_ROWS);
    transposeNaive<<<grid, threads>>>(d_out, d_in, width, height);
    transposeCoalesced<<<grid, threads>>>(d_out, d_in, width, height);
    getLastCudaError("transpose");
    checkCudaErrors(cudaDeviceSynchronize());
    std::printf("done\n");
    checkCudaErrors(cudaFree(d_in));
    checkCudaErrors(cudaFree(d_out));
    return 0;
}
