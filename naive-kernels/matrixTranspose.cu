// matrixTranspose: out = in^T. `in` is height rows x width columns (row-major);
// `out` is width rows x height columns: out[x][y] = in[y][x].
// Launch: 2-D grid over the input, block (16,16,1) by default,
// grid = (ceil(width/bx), ceil(height/by)).
// Naive: reads are coalesced but writes are strided by `height` (uncoalesced); no shared-memory tile.
extern "C" __global__ void matrixTranspose(const float* in, float* out, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        out[x * height + y] = in[y * width + x];
    }
}
