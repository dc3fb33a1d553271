//! CUDA source analysis (being written).
