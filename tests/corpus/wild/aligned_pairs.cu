// Key/index pairs packed in 8 bytes so one load fetches both.
struct __align__(8) KeyIndex {
    float key;
    int index;
};

__global__ void make_pairs(const float* keys, KeyIndex* pairs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        KeyIndex p;
        p.key = keys[i];
        p.index = i;
        pairs[i] = p;
    }
}

__global__ void pair_keys(const KeyIndex* pairs, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = 2.0f * pairs[i].key;
    }
}
