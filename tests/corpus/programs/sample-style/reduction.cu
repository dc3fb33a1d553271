// Sums 2^24 random floats with the kernels of reduction_kernels.cuh and compares with the CPU.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "check_helpers.h"
#include "reduction_kernels.cuh"

static void run_reduce3(int threads, int blocks, const float* in, float* out, unsigned int n)
{
    size_t smem = threads * sizeof(float);
    switch (threads) {
    case 512: reduce3<512><<<blocks, threads, smem>>>(in, out, n); break;
    case 256: reduce3<256><<<blocks, threads, smem>>>(in, out, n); break;
    case 128: reduce3<128><<<blocks, threads, smem>>>(in, out, n); break;
    case 64: reduce3<64><<<blocks, threads, smem>>>(in, out, n); break;
    default: std::fprintf(stderr, "unsupported block size %d\n", threads); std::exit(1);
    }
}

int main(int argc, char** argv)
{
    int which = argc > 1 ? std::atoi(argv[1]) : 3;
    unsigned int n = 1u << 24;
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    std::vector<float> h(n);
    double want = 0.0;
    for (unsigned int i = 0; i < n; ++i) {
        h[i] = (float)(std::rand() & 0xFF) / 256.0f;
        want += h[i];
    }
    float *d_in, *d_out;
    checkCudaErrors(cudaMalloc(&d_in, n * sizeof(float)));
    checkCudaErrors(cudaMalloc(&d_out, sizeof(float)));
    checkCudaErrors(cudaMemset(d_out, 0, sizeof(float)));
    checkCudaErrors(cudaMemcpy(d_in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    if (which == 0) {
        reduce0<<<blocks, threads, threads * sizeof(float)>>>(d_in, d_out, n);
    } else {
        run_reduce3(threads, blocks, d_in, d_out, n);
    }
    getLastCudaError("reduction kernel");
    float total = 0.0f;
    checkCudaErrors(cudaMemcpy(&total, d_out, sizeof(float), cudaMemcpyDeviceToHost));
    double got = total;
    std::printf("reduce%d: %f (want %f) %s\n", which, got, want, std::abs(got - want) < 1e-3 * want ? "PASSED" : "FAILED");
    checkCudaErrors(cudaFree(d_in));
    checkCudaErrors(cudaFree(d_out));
    return 0;
}
