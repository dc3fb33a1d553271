"""A naive matrix multiply with 2-D blocks and a tile factor in y (each thread computes tile_size_y rows),
written for Kernel Tuner: grid_div_y divides the grid by both, a restriction bounds the block."""

import numpy as np

KERNEL = """
__global__ void matmul(float *C, const float *A, const float *B, int n) {
    int x = blockIdx.x * block_size_x + threadIdx.x;
    int y0 = (blockIdx.y * block_size_y + threadIdx.y) * tile_size_y;
    #pragma unroll
    for (int t = 0; t < tile_size_y; t++) {
        int y = y0 + t;
        if (x < n && y < n) {
            float sum = 0.0f;
            for (int k = 0; k < n; k++) {
                sum += A[y * n + k] * B[k * n + x];
            }
            C[y * n + x] = sum;
        }
    }
}
"""

TUNE_PARAMS = {
    "block_size_x": [16, 32, 64, 128],
    "block_size_y": [1, 2, 4, 8, 16],
    "tile_size_y": [1, 2, 4],
}


def tune(kernel_tuner):
    n = 2048
    A = np.random.randn(n, n).astype(np.float32)
    B = np.random.randn(n, n).astype(np.float32)
    C = np.zeros((n, n), dtype=np.float32)
    answer = [(A @ B).astype(np.float32), None, None, None]
    restrictions = ["block_size_x * block_size_y >= 64", "block_size_x * block_size_y <= 1024"]
    return kernel_tuner.tune_kernel(
        "matmul", KERNEL, (n, n), [C, A, B, np.int32(n)], TUNE_PARAMS,
        grid_div_y=["block_size_y", "tile_size_y"], restrictions=restrictions,
        answer=answer, atol=1e-2, lang="cupy", quiet=True,
    )


if __name__ == "__main__":
    import kernel_tuner

    results, env = tune(kernel_tuner)
    print(env["best_config"])
