// matrixMultiply: C = A * B for row-major float matrices (A: A_height x A_width, B: A_width x B_width).
// 2-D block tiling in shared memory plus register tiling: a block of block_size_x x block_size_y threads
// computes a BM x BN tile of C (BM = block_size_y * tile_size_y, BN = block_size_x * tile_size_x), and each
// thread computes a tile_size_y x tile_size_x sub-tile held in registers. Per k-slice of depth tile_size_k the
// block stages A (transposed, so a thread's column of A is contiguous) and B in shared memory; each value a
// thread loads from shared memory (as float4) is reused tile_size_x or tile_size_y times, and the next slice is
// loaded into registers while the current one is used. Loads outside the matrices read zero and stores are
// guarded, so any size works; every element is summed in k order.
extern "C" __global__ void matrixMultiply(const float* A, const float* B, float* C,
                                          int A_width, int A_height, int B_width)
{
    constexpr int BM = block_size_y * tile_size_y;
    constexpr int BN = block_size_x * tile_size_x;
    constexpr int BK = tile_size_k;
    constexpr int THREADS = block_size_x * block_size_y;
    // Declared as float4 so that rows are 16-byte aligned for the float4 reads; written as floats. The +4
    // floats of padding per row of A spread its transposed stores over the banks.
    constexpr int LDA = BM + 4;
    __shared__ float4 As4[BK][LDA / 4];
    __shared__ float4 Bs4[BK][BN / 4];
    float* As = reinterpret_cast<float*>(&As4[0][0]);
    float* Bs = reinterpret_cast<float*>(&Bs4[0][0]);

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int tid = ty * block_size_x + tx;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    float acc[tile_size_y][tile_size_x];
#pragma unroll
    for (int i = 0; i < tile_size_y; ++i) {
#pragma unroll
        for (int j = 0; j < tile_size_x; ++j) {
            acc[i][j] = 0.0f;
        }
    }

    // Each thread loads A_LOADS elements of every A slice and B_LOADS of every B slice. The next slice is
    // loaded into registers while the current one is used, so global-memory latency hides behind arithmetic.
    constexpr int A_LOADS = (BM * BK) / THREADS;
    constexpr int B_LOADS = (BK * BN) / THREADS;
    float a_next[A_LOADS];
    float b_next[B_LOADS];
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
        // A slice (BM x BK): consecutive threads read consecutive k (coalesced).
        const int e = tid + l * THREADS;
        const int gr = row0 + e / BK;
        const int gc = e % BK;
        a_next[l] = (gr < A_height && gc < A_width) ? A[(size_t)gr * A_width + gc] : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
        // B slice (BK x BN): consecutive threads read consecutive columns (coalesced).
        const int e = tid + l * THREADS;
        const int gr = e / BN;
        const int gc = col0 + e % BN;
        b_next[l] = (gr < A_width && gc < B_width) ? B[(size_t)gr * B_width + gc] : 0.0f;
    }

    for (int k0 = 0; k0 < A_width; k0 += BK) {
        // Store the slice loaded ahead: A transposed (k-major), B as it is.
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int e = tid + l * THREADS;
            As[(e % BK) * LDA + e / BK] = a_next[l];
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int e = tid + l * THREADS;
            Bs[e] = b_next[l]; // row e / BN, column e % BN
        }
        __syncthreads();

        // Start loading the next slice.
        const int k1 = k0 + BK;
        if (k1 < A_width) {
#pragma unroll
            for (int l = 0; l < A_LOADS; ++l) {
                const int e = tid + l * THREADS;
                const int gr = row0 + e / BK;
                const int gc = k1 + e % BK;
                a_next[l] = (gr < A_height && gc < A_width) ? A[(size_t)gr * A_width + gc] : 0.0f;
            }
#pragma unroll
            for (int l = 0; l < B_LOADS; ++l) {
                const int e = tid + l * THREADS;
                const int gr = k1 + e / BN;
                const int gc = col0 + e % BN;
                b_next[l] = (gr < A_width && gc < B_width) ? B[(size_t)gr * B_width + gc] : 0.0f;
            }
        }

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[tile_size_y];
            float b[tile_size_x];
#pragma unroll
            for (int i = 0; i < tile_size_y; i += 4) {
                const float4 v = As4[k][(ty * tile_size_y + i) / 4];
                a[i] = v.x;
                a[i + 1] = v.y;
                a[i + 2] = v.z;
                a[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < tile_size_x; j += 4) {
                const float4 v = Bs4[k][(tx * tile_size_x + j) / 4];
                b[j] = v.x;
                b[j + 1] = v.y;
                b[j + 2] = v.z;
                b[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < tile_size_y; ++i) {
#pragma unroll
                for (int j = 0; j < tile_size_x; ++j) {
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < tile_size_y; ++i) {
        const int r = row0 + ty * tile_size_y + i;
        if (r < A_height) {
#pragma unroll
            for (int j = 0; j < tile_size_x; ++j) {
                const int c = col0 + tx * tile_size_x + j;
                if (c < B_width) {
                    C[(size_t)r * B_width + c] = acc[i][j];
                }
            }
        }
    }
}
