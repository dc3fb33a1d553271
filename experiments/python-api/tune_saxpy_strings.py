"""saxpy with string and float parameters, written for Kernel Tuner: LOAD_X is the expression that reads x
(plain or through the read-only cache), ACC_T the type the product is computed in, and items_per_thread a
float factor of work per thread (a restriction keeps it whole per block), as Kernel Tuner scripts do."""

import numpy as np

KERNEL = """
__global__ void saxpy(float *out, const float *x, const float *y, float a, int n) {
    int first = (blockIdx.x * block_size_x) * (int)items_per_thread + threadIdx.x;
    for (int k = 0; k < (int)items_per_thread; k++) {
        int i = first + k * block_size_x;
        if (i < n) {
            out[i] = (float)((ACC_T)a * (ACC_T)LOAD_X + (ACC_T)y[i]);
        }
    }
}
"""

TUNE_PARAMS = {
    "block_size_x": [128, 256, 512],
    "items_per_thread": [1.0, 2.0, 4.0, 8.0],
    "LOAD_X": ["x[i]", "__ldg(&x[i])"],
    "ACC_T": ["float", "double"],
}


def tune(kernel_tuner):
    size = 1 << 25
    x = np.random.randn(size).astype(np.float32)
    y = np.random.randn(size).astype(np.float32)
    out = np.zeros_like(y)
    a = np.float32(1.5)
    answer = [a * x + y, None, None, None, None]
    return kernel_tuner.tune_kernel(
        "saxpy", KERNEL, size, [out, x, y, a, np.int32(size)], TUNE_PARAMS,
        grid_div_x=["block_size_x", "items_per_thread"],
        restrictions=["ACC_T == 'float' or items_per_thread <= 4"],
        answer=answer, atol=1e-4, lang="cupy", quiet=True,
    )


if __name__ == "__main__":
    import kernel_tuner

    results, env = tune(kernel_tuner)
    print(env["best_config"])
