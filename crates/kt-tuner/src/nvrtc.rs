//! NVRTC: one CUDA source (with a configuration's `#define`s in front) to one CUBIN for the device's exact
//! architecture. A CUBIN loads in ~0.1 ms; PTX would cost the driver a JIT (~37 ms) at every load.
//! Nothing here needs a GPU or a CUDA context, so compilation runs in the parent process, on many threads,
//! while the worker is still creating its context.

use std::ffi::CString;
use std::time::Instant;

use cudarc::nvrtc::{result, sys};

use crate::error::TunerError;

/// What a successful compilation produced.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
    pub ms: f64,
}

/// NVRTC rejected the source: its log says why.
#[derive(Debug, Clone)]
pub struct CompileFailure {
    pub log: String,
}

/// Fails with a clear error instead of the panic cudarc's dynamic loader gives when libnvrtc is absent.
pub fn ensure_available() -> Result<(), TunerError> {
    // SAFETY: only tries to dlopen libnvrtc; no NVRTC function is called.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(TunerError::NoNvrtc)
    }
}

/// NVRTC's version, part of every module key (a new compiler may produce different code).
pub fn version() -> Result<(i32, i32), TunerError> {
    ensure_available()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints; the library is present.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| TunerError::Nvrtc(format!("nvrtcVersion: {e:?}")))?;
    Ok((major, minor))
}

/// The source NVRTC sees: Kernel Tuner's prefix of `#define name value` lines, then `#line 1` so that
/// compiler messages point at the user's own line numbers.
pub fn full_source(defines: &[(String, String)], source: &str) -> String {
    let mut s = String::with_capacity(source.len() + defines.len() * 32 + 16);
    for (name, value) in defines {
        s.push_str(&format!("#define {name} {value}\n"));
    }
    s.push_str("#line 1\n");
    s.push_str(source);
    s
}

/// The options every compilation gets, in front of the caller's.
pub fn arch_option(cc: (i32, i32)) -> String {
    format!("--gpu-architecture=sm_{}{}", cc.0, cc.1)
}

/// Compiles `source` (already carrying its defines) to a CUBIN. `Ok(Err(..))` is a compile error in the
/// user's code (kept with its log); `Err(..)` is NVRTC itself failing.
pub fn compile(
    source: &str,
    options: &[String],
) -> Result<Result<Compiled, CompileFailure>, TunerError> {
    ensure_available()?;
    let start = Instant::now();
    let src = CString::new(source)
        .map_err(|_| TunerError::Source("the kernel source contains a NUL byte".into()))?;
    let prog = result::create_program(&src, Some(c"kernel.cu"))
        .map_err(|e| TunerError::Nvrtc(format!("create program: {e:?}")))?;
    // SAFETY: prog was just created and is destroyed exactly once below; the option strings outlive the call.
    let compiled = unsafe { result::compile_program(prog, options) };
    // SAFETY: prog is valid until destroy_program.
    let log = unsafe { result::get_program_log(prog) }
        .map(|chars| {
            let bytes: Vec<u8> = chars
                .iter()
                .map(|&c| c as u8)
                .take_while(|&b| b != 0)
                .collect();
            String::from_utf8_lossy(&bytes).trim().to_string()
        })
        .unwrap_or_default();
    let out = match compiled {
        Err(_) => Ok(Err(CompileFailure { log })),
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: prog compiled successfully; NVRTC writes the size, then exactly `size` bytes.
            let cubin = unsafe {
                sys::nvrtcGetCUBINSize(prog, &mut size)
                    .result()
                    .map_err(|e| TunerError::Nvrtc(format!("nvrtcGetCUBINSize: {e:?}")))?;
                let mut buf = vec![0u8; size];
                sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut _)
                    .result()
                    .map_err(|e| TunerError::Nvrtc(format!("nvrtcGetCUBIN: {e:?}")))?;
                buf
            };
            if cubin.is_empty() {
                Ok(Err(CompileFailure {
                    log: format!(
                        "{log}\nNVRTC produced no CUBIN: is --gpu-architecture a real sm_XY?"
                    ),
                }))
            } else {
                Ok(Ok(Compiled {
                    cubin,
                    log,
                    ms: start.elapsed().as_secs_f64() * 1e3,
                }))
            }
        }
    };
    // SAFETY: prog is valid and destroyed once.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_come_first_and_line_numbers_restart() {
        let s = full_source(
            &[("block_size_x".into(), "32".into())],
            "__global__ void k() {}\n",
        );
        assert_eq!(
            s,
            "#define block_size_x 32\n#line 1\n__global__ void k() {}\n"
        );
    }

    #[test]
    fn arch_option_names_the_compute_capability() {
        assert_eq!(arch_option((9, 0)), "--gpu-architecture=sm_90");
    }

    #[test]
    fn compiles_to_cubin_when_nvrtc_is_present() {
        if ensure_available().is_err() {
            println!("skipped: libnvrtc not present on this machine");
            return;
        }
        let ok = compile(
            "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }",
            &[arch_option((8, 0))],
        )
        .unwrap();
        assert!(ok.unwrap().cubin.len() > 100);
        let bad = compile(
            "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = undefined_name; }",
            &[arch_option((8, 0))],
        )
        .unwrap();
        assert!(bad.unwrap_err().log.contains("undefined_name"));
    }
}
