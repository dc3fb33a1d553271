// Error checking for the sample programs in this folder.
#ifndef CHECK_HELPERS_H
#define CHECK_HELPERS_H
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define checkCudaErrors(val) check_result((val), #val, __FILE__, __LINE__)

inline void check_result(cudaError_t result, const char* what, const char* file, int line)
{
    if (result != cudaSuccess) {
        std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, what, cudaGetErrorString(result));
        std::exit(EXIT_FAILURE);
    }
}

#define getLastCudaError(msg) check_result(cudaGetLastError(), msg, __FILE__, __LINE__)
#endif
