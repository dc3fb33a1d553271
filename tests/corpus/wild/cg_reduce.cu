#include <cooperative_groups.h>

namespace cg = cooperative_groups;

__device__ float tile_sum(cg::thread_block_tile<32> tile, float v) {
    for (int offset = tile.size() / 2; offset > 0; offset /= 2) {
        v += tile.shfl_down(v, offset);
    }
    return v;
}

// Sum of n floats into *total: a warp-level sum per tile, tile sums combined in shared memory.
__global__ void reduce_sum_cg(const float* in, float* total, int n) {
    __shared__ float warp_sums[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        v += in[i];
    }
    v = tile_sum(tile, v);
    if (tile.thread_rank() == 0) {
        warp_sums[tile.meta_group_rank()] = v;
    }
    cg::sync(block);
    if (tile.meta_group_rank() == 0) {
        float w = tile.thread_rank() < tile.meta_group_size() ? warp_sums[tile.thread_rank()] : 0.0f;
        w = tile_sum(tile, w);
        if (tile.thread_rank() == 0) {
            atomicAdd(total, w);
        }
    }
    block.sync();
}
