// Velocity-Verlet update: positions += velocities*dt + 0.5*accelerations*dt^2; velocities += accelerations*dt.
__global__ void verlet_integration(float3* positions, float3* velocities, float3* accelerations,
                                   float dt, int num_particles)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < num_particles) {
        float3 p = positions[i];
        float3 v = velocities[i];
        float3 a = accelerations[i];
        float half_dt2 = 0.5f * dt * dt;
        p.x += v.x * dt + a.x * half_dt2;
        p.y += v.y * dt + a.y * half_dt2;
        p.z += v.z * dt + a.z * half_dt2;
        v.x += a.x * dt;
        v.y += a.y * dt;
        v.z += a.z * dt;
        positions[i] = p;
        velocities[i] = v;
    }
}
