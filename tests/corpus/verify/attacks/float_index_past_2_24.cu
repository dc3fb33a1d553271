// c = a + b with the global index computed in float (as a kernel converted from a graphics shader does):
// exact up to 2^24, past it odd indices round to their even neighbours.
__global__ void vectorAdd(const float* a, const float* b, float* c, int n)
{
    float fi = (float)blockIdx.x * (float)blockDim.x + (float)threadIdx.x;
    int i = (int)fi;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
