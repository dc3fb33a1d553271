#include <cstdio>
#include <vector>
#include "stencil.cuh"

int main() {
    const int n = 1 << 20;
    std::vector<float> h_in(n, 1.0f), h_out(n);
    float *d_in, *d_out;
    cudaMalloc(&d_in, n * sizeof(float));
    cudaMalloc(&d_out, n * sizeof(float));
    cudaMemcpy(d_in, h_in.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    stencil_1d<<<(n + 255) / 256, 256>>>(d_in, d_out, n);
    cudaMemcpy(h_out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost);
    printf("out[n/2] = %f\n", h_out[n / 2]);
    cudaFree(d_in);
    cudaFree(d_out);
    return 0;
}
