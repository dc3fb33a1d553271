// Shared by the benchmark programs in this folder: error checks, a ceil-div helper, and the element type
// the bfloat16 programs use.
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__, \
                    __LINE__);                                                             \
            exit(EXIT_FAILURE);                                                            \
        }                                                                                  \
    } while (0)

template <class T>
__host__ __device__ inline T ceil_div(T a, T b) { return (a + b - 1) / b; }

typedef __nv_bfloat16 floatX;

// A 16-byte bundle of elements, so one thread moves 128 bits per load or store.
template <class T>
struct __align__(16) Pack128 {
    static constexpr int size = 16 / sizeof(T);
    T v[size];
};

template <class T>
__device__ inline Pack128<T> load128(const T* p) { return *reinterpret_cast<const Pack128<T>*>(p); }

template <class T>
__device__ inline void store128(T* p, Pack128<T> x) { *reinterpret_cast<Pack128<T>*>(p) = x; }

inline float random_float() { return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f; }
