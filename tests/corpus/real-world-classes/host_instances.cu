// Failure class: template value parameters without defaults; the program's own launches say which exist.
#include <cstdio>

template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void block_sum(const T *in, T *out, unsigned int n) {
  __shared__ T s[blockSize];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockSize + tid;
  s[tid] = (i < n) ? in[i] : T(0);
  __syncthreads();
  for (unsigned int k = blockSize / 2; k > 0; k >>= 1) {
    if (tid < k) s[tid] += s[tid + k];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

template <class T> void run(int threads, const T *in, T *out, unsigned int n) {
  switch (threads) {
  case 256: block_sum<T, 256, true><<<(n + 255) / 256, 256>>>(in, out, n); break;
  case 128: block_sum<T, 128, true><<<(n + 127) / 128, 128>>>(in, out, n); break;
  }
}

int main() {
  run<float>(256, nullptr, nullptr, 0);
  block_sum<float, 64, true><<<1, 64>>>(nullptr, nullptr, 0);
  return 0;
}
