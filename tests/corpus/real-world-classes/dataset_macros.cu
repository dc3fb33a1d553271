// PolyBench's shape: the problem size lives in an `#ifdef` on a macro that only the condition names.
#include <stdio.h>

#define STANDARD_DATASET

#ifdef MINI_DATASET
#define NX 64
#define NY 64
#endif

#ifdef STANDARD_DATASET
#define NX 4096
#define NY 4096
#endif

#define DATA_TYPE float

__global__ void atax_row(DATA_TYPE *a, DATA_TYPE *x, DATA_TYPE *tmp, int nx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nx && i < NX) {
        DATA_TYPE sum = 0;
        for (int j = 0; j < NY; j++) {
            sum += a[i * NY + j] * x[j];
        }
        tmp[i] = sum;
    }
}

int main() {
    printf("%d\n", NX);
    return 0;
}
