// k-means assignment: labels[p] = index of the centroid nearest to point p (squared Euclidean distance, ties to the lowest index).
__global__ void assign_clusters(float* data_points, float* centroids, int* labels,
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
