// game_of_life: one Conway step on a width x height torus (edges wrap) of ints (0 dead, 1 alive).
// next_grid[y][x] = 1 if (alive and 2 or 3 live neighbours) or (dead and exactly 3), else 0.
// Launch: 2-D grid, block (16,16,1) by default, grid = (ceil(width/bx), ceil(height/by)).
// Naive: one thread per cell, each of the 9 reads goes to global memory (neighbours shared by
// adjacent threads are re-fetched; no shared-memory halo), modulo arithmetic for the wrap.
extern "C" __global__ void game_of_life(const int* current_grid, int* next_grid, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        int live = 0;
        for (int dy = -1; dy <= 1; ++dy) {
            for (int dx = -1; dx <= 1; ++dx) {
                if (dx == 0 && dy == 0) {
                    continue;
                }
                int nx = (x + dx + width) % width;
                int ny = (y + dy + height) % height;
                live += current_grid[ny * width + nx];
            }
        }
        int alive = current_grid[y * width + x];
        next_grid[y * width + x] = (live == 3 || (alive && live == 2)) ? 1 : 0;
    }
}
