// c = a + b, honest; its sidecar claims 24 bytes an element where the kernel moves 12 (a user's slip, or a
// rewrite that claims work it does not do). Every time it takes is then below the floor those bytes set on
// the device's confirmed bandwidth: kt must refuse the time as impossible, with the figures, and name the
// sidecar's `bytes` among the culprits, rather than print a share of peak near 200 %.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
