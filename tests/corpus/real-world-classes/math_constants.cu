// Failure class: standard C constants a CUDA file takes from <math.h> through nvcc's environment.
#include <cstdio>

__global__ void gelu_max(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float m = -INFINITY;
  m = fmaxf(m, x);
  out[i] = 0.5f * m * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (m + 0.044715f * m * m * m))) + (FLT_EPSILON * 0.0f);
}
