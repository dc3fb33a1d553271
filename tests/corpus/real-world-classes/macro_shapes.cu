// Failure classes: a block shape from macros (TILE_DIM x BLOCK_ROWS), a `#pragma unroll` between a loop's
// head and its unbraced body, a kernel defined through a macro, and dynamic shared memory through a helper.
#define TILE_DIM 32
#define BLOCK_ROWS 8

template <class T> struct SharedMemory {
  __device__ inline operator T *() {
    extern __shared__ int smem_[];
    return (T *)smem_;
  }
};

__global__ void transpose_rows(float *odata, const float *idata, int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
#pragma unroll
    tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void shared_sum(const float *in, float *out, int n) {
  float *s = SharedMemory<float>();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    float acc = 0.0f;
    for (int k = 0; k < blockDim.x; ++k) acc += s[k];
    out[blockIdx.x] = acc;
  }
}

#define ELEMENTWISE(name, op)                                        \
  __global__ void name(float *x, int n) {                            \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                   \
    if (i < n) x[i] = op(x[i]);                                      \
  }

ELEMENTWISE(abs_all, fabsf)
