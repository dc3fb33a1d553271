// Shared definitions for the half-precision kernels in this folder.
#pragma once

#include <cuda_fp16.h>
#include <stdio.h>
#include <stdlib.h>

typedef half floatX;

#define CUDA_CHECK(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_), \
                    __FILE__, __LINE__);                                        \
            exit(EXIT_FAILURE);                                                 \
        }                                                                       \
    } while (0)

#define WARP_SIZE 32

__host__ __device__ inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

__device__ inline float warp_sum(float v) {
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) {
        v += __shfl_xor_sync(0xffffffff, v, offset);
    }
    return v;
}
