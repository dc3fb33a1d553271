// Failure class: host-only headers reach NVRTC through a header chain.
#include "string_helper.h"
#include <math.h>

__global__ void scale(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = s * x[i];
}

int main(int argc, char **argv) {
  if (argc > 1 && parse_flag(argv[1])) printf("quick\n");
  return 0;
}
