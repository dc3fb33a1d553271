// One step of Conway's Game of Life on a width x height torus of ints (0 dead, 1 alive).
__global__ void game_of_life(int* current_grid, int* next_grid, int width, int height)
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
