//! From a CUDA file to a loaded module, with no GPU needed: the file as the tuner compiles it
//! (`kernel_file`, `headers`, `nvrtc_prelude`), NVRTC with nvcc behind it (`nvrtc`, `nvcc`), compiled modules cached by what
//! determines their bytes (`module_cache`, `source_stamp`), kt's own device kernels (`device_kernels`) and
//! one configuration compiled on its own (`compile_check`, `kt tune --compile-only`).

pub mod compile_check;
pub mod device_kernels;
pub mod headers;
pub mod kernel_file;
pub mod module_cache;
pub mod nvcc;
pub mod nvrtc;
pub mod nvrtc_prelude;
pub mod source_stamp;
