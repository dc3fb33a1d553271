#ifndef STENCIL_CUH
#define STENCIL_CUH

#define RADIUS 3

// out[i] = sum of in[i-RADIUS .. i+RADIUS], zero outside the array.
__global__ void stencil_1d(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sum = 0.0f;
    for (int offset = -RADIUS; offset <= RADIUS; offset++) {
        int j = i + offset;
        if (j >= 0 && j < n) sum += in[j];
    }
    out[i] = sum;
}

#endif
