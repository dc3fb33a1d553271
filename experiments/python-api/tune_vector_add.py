"""Kernel Tuner's vector_add example, written for Kernel Tuner: `tune(kernel_tuner)` runs it with whichever
module is passed (compare.py passes kernel_tuner, then kt); run alone it uses Kernel Tuner."""

import numpy as np

KERNEL = """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""

TUNE_PARAMS = {"block_size_x": [32, 64, 128, 256, 512, 1024]}


def tune(kernel_tuner):
    size = 1 << 26
    a = np.random.randn(size).astype(np.float32)
    b = np.random.randn(size).astype(np.float32)
    c = np.zeros_like(b)
    n = np.int32(size)
    args = [c, a, b, n]
    answer = [a + b, None, None, None]
    return kernel_tuner.tune_kernel(
        "vector_add", KERNEL, size, args, TUNE_PARAMS, answer=answer, lang="cupy", quiet=True
    )


if __name__ == "__main__":
    import kernel_tuner

    results, env = tune(kernel_tuner)
    print(env["best_config"])
