#include <cuda_runtime.h>

__device__ float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__device__ float3 operator*(float s, float3 v) { return make_float3(s * v.x, s * v.y, s * v.z); }

// Explicit Euler step for n particles.
__global__ void integrate_particles(float3* pos, float3* vel, const float3* force, float dt, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float3 v = vel[i] + dt * force[i];
    vel[i] = v;
    pos[i] = pos[i] + dt * v;
}
