// Failure class: the launch is the program's, not kt's guess. A block-per-row softmax (llm.c style), a kernel
// that handles eight values per thread launched over ceil_div(N, block_size * 8) blocks, and a 1-D block of
// BLOCKSIZE * BLOCKSIZE threads (siboehm's sgemm style).
#include <cuda_runtime.h>

#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

__global__ void softmax_rows(float *out, const float *inp, int N, int C) {
  extern __shared__ float shared[];
  int row = blockIdx.x;
  float m = -1e30f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) m = fmaxf(m, inp[row * C + i]);
  shared[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  float row_max = shared[0];
  __syncthreads();
  float sum = 0.0f;
  for (int i = threadIdx.x; i < C; i += blockDim.x) sum += expf(inp[row * C + i] - row_max);
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  float total = shared[0];
  for (int i = threadIdx.x; i < C; i += blockDim.x) out[row * C + i] = expf(inp[row * C + i] - row_max) / total;
}

__global__ void scale8(float *out, const float *inp, int N) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  for (int k = 0; k < 8; k++)
    if (i + k < N) out[i + k] = 2.0f * inp[i + k];
}

template <const unsigned int BLOCKSIZE>
__global__ void sgemm_coalesced(int M, int N, int K, const float *A, const float *B, float *C) {
  const int row = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
  const int col = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

void softmax_forward(float *out, const float *inp, int rows, int cols) {
  softmax_rows<<<rows, 256, 256 * sizeof(float)>>>(out, inp, rows, cols);
}

void scale_forward(float *out, const float *inp, int n) {
  int block_size = 128;
  const int grid_size = ceil_div(n, block_size * 8);
  scale8<<<grid_size, block_size>>>(out, inp, n);
}

void sgemm_forward(int M, int N, int K, const float *A, const float *B, float *C) {
  dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
  dim3 blockDim(32 * 32);
  sgemm_coalesced<32><<<gridDim, blockDim>>>(M, N, K, A, B, C);
}
