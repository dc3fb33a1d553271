// assign_clusters: k-means assignment step. For each point (row of `dims` floats in data_points),
// labels[p] = index of the centroid (row of `dims` floats in centroids) with the smallest squared
// Euclidean distance; ties go to the lowest index.
// Launch: 1-D, block 256 by default, grid = ceil(num_points/256); one thread per point.
// Naive: each thread walks its point row (strided by dims across the warp: uncoalesced) once per
// centroid, and all centroids are re-read from global memory by every thread (no shared-memory
// staging, no register caching of the point).
extern "C" __global__ void assign_clusters(const float* data_points, const float* centroids, int* labels,
                                           int num_points, int num_clusters, int dims)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < num_points) {
        int best = 0;
        float best_dist = 3.402823466e+38f;
        for (int c = 0; c < num_clusters; ++c) {
            float dist = 0.0f;
            for (int d = 0; d < dims; ++d) {
                float diff = data_points[p * dims + d] - centroids[c * dims + d];
                dist += diff * diff;
            }
            if (dist < best_dist) {
                best_dist = dist;
                best = c;
            }
        }
        labels[p] = best;
    }
}
