// layernorm_forward: GPT-2 layer normalisation over the last dimension. inp is N x C row-major
// with N = B*T rows (batch times sequence length). For each row i:
//   mean[i] = sum(x)/C, rstd[i] = 1/sqrt(sum((x-mean)^2)/C + 1e-5),
//   out[i][c] = (x[c] - mean[i]) * rstd[i] * weight[c] + bias[c].
// Launch: 1-D, block 256 by default, grid = ceil(N/256); one thread per row.
// Naive: one thread walks a whole row three times (mean, variance, normalise); adjacent threads
// touch addresses C floats apart (uncoalesced), and only N threads exist in total.
extern "C" __global__ void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                             const float* weight, const float* bias, int N, int C)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N) {
        const float* x = inp + (long long)row * C;
        float m = 0.0f;
        for (int c = 0; c < C; ++c) {
            m += x[c];
        }
        m = m / C;
        float v = 0.0f;
        for (int c = 0; c < C; ++c) {
            float d = x[c] - m;
            v += d * d;
        }
        v = v / C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        float* o = out + (long long)row * C;
        for (int c = 0; c < C; ++c) {
            o[c] = (x[c] - m) * s * weight[c] + bias[c];
        }
        mean[row] = m;
        rstd[row] = s;
    }
}
