//! The tests format (docs/tests-format.md): one directory per test with `manifest.json`, `args/<name>.npy`
//! and `expected/<name>.npy`. The generator harness writes it, Stage 2 completes it, the tuner reads it.

pub mod dtype;
pub mod manifest;
pub mod npy;

pub use dtype::DType;
pub use manifest::{FORMAT, ManifestArg, ManifestConstant, TestManifest};
pub use npy::NpyHeader;
