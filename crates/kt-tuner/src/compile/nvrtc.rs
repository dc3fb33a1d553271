//! NVRTC: one CUDA source (with a configuration's `#define`s in front) to one CUBIN for the device's exact
//! architecture. A CUBIN loads in ~0.1 ms; PTX would cost the driver a JIT (~37 ms) at every load.
//! Nothing here needs a GPU or a CUDA context, so compilation runs in the parent process, on many threads,
//! while the worker is still creating its context.

use std::ffi::CString;
use std::time::Instant;

use cudarc::nvrtc::{result, sys};

use crate::error::TunerError;

/// One compilation: the source text (a configuration's defines in front), NVRTC options (architecture,
/// `-I` directories, the user's flags), headers NVRTC answers from memory (`#include` name, contents), and
/// the kernel's name expression (`&k`, `&ns::k`, `&k<16>`), whose lowered (mangled) name is the symbol to
/// look up in the CUBIN. Without one, the symbol is the kernel's plain name (`extern "C"`). `family`, when
/// set, is the same for every configuration of one kernel (a hash of its unit and options), so that what
/// one configuration teaches about the compilers (NVRTC cannot read the unit's headers) serves the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Program {
    pub source: String,
    pub options: Vec<String>,
    pub headers: Vec<(String, String)>,
    pub name_expression: Option<String>,
    pub family: Option<u64>,
}

impl Program {
    pub fn new(source: impl Into<String>, options: Vec<String>) -> Self {
        Program {
            source: source.into(),
            options,
            ..Program::default()
        }
    }
}

/// What a successful compilation produced.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
    pub ms: f64,
    /// The symbol of the name expression in the CUBIN.
    pub lowered_name: Option<String>,
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
    let mut s = String::with_capacity(source.len() + defines.len() * 32 + 40);
    for (name, value) in defines {
        s.push_str(&format!("#define {name} {value}\n"));
    }
    if uses_register_keyword(source) {
        // C++17 removed `register`; nvcc still takes it (a warning), NVRTC refuses it. It never changed what
        // the compiler does, so it is dropped, as nvcc drops it.
        s.push_str("#define register\n");
    }
    s.push_str("#line 1\n");
    s.push_str(source);
    s
}

/// Whether `source` has the word `register` (SHOC's and older benchmarks' `register float s0 = …`).
fn uses_register_keyword(source: &str) -> bool {
    source.match_indices("register").any(|(i, w)| {
        let word_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let before = source[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !word_char(c));
        let after = source[i + w.len()..]
            .chars()
            .next()
            .is_none_or(|c| !word_char(c));
        before && after
    })
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
    compile_program(&Program::new(source, options.to_vec()))
}

/// Compiles a program, resolving its name expression.
pub fn compile_program(p: &Program) -> Result<Result<Compiled, CompileFailure>, TunerError> {
    ensure_available()?;
    let start = Instant::now();
    let nul = |what: &str| TunerError::Source(format!("{what} contains a NUL byte"));
    let src = CString::new(p.source.as_str()).map_err(|_| nul("the kernel source"))?;
    let mut names = Vec::new();
    let mut contents = Vec::new();
    for (name, text) in &p.headers {
        names.push(CString::new(name.as_str()).map_err(|_| nul("a header name"))?);
        contents.push(CString::new(text.as_str()).map_err(|_| nul("a header"))?);
    }
    let name_ptrs: Vec<*const std::ffi::c_char> = names.iter().map(|c| c.as_ptr()).collect();
    let content_ptrs: Vec<*const std::ffi::c_char> = contents.iter().map(|c| c.as_ptr()).collect();
    let expression = match &p.name_expression {
        Some(e) => Some(CString::new(e.as_str()).map_err(|_| nul("the name expression"))?),
        None => None,
    };
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer refers to a NUL-terminated string that outlives the program (destroyed below).
    unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            c"kernel.cu".as_ptr(),
            names.len() as i32,
            content_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    }
    .result()
    .map_err(|e| TunerError::Nvrtc(format!("create program: {e:?}")))?;
    let out = compile_created(prog, p, expression.as_deref(), start);
    // SAFETY: prog is valid and destroyed once.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

fn compile_created(
    prog: sys::nvrtcProgram,
    p: &Program,
    expression: Option<&std::ffi::CStr>,
    start: Instant,
) -> Result<Result<Compiled, CompileFailure>, TunerError> {
    if let Some(e) = expression {
        // SAFETY: prog is valid; the expression is NUL-terminated and outlives the program.
        unsafe { sys::nvrtcAddNameExpression(prog, e.as_ptr()) }
            .result()
            .map_err(|err| TunerError::Nvrtc(format!("nvrtcAddNameExpression: {err:?}")))?;
    }
    // SAFETY: prog is valid until the caller destroys it; the option strings outlive the call.
    let compiled = unsafe { result::compile_program(prog, &p.options) };
    // SAFETY: prog is valid.
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
    if compiled.is_err() {
        return Ok(Err(CompileFailure { log }));
    }
    let lowered_name = match expression {
        None => None,
        Some(e) => {
            let mut lowered: *const std::ffi::c_char = std::ptr::null();
            // SAFETY: prog compiled with this expression added; NVRTC owns the returned string until
            // the program is destroyed, and it is copied out at once.
            let r = unsafe { sys::nvrtcGetLoweredName(prog, e.as_ptr(), &mut lowered) };
            if r.result().is_err() || lowered.is_null() {
                return Ok(Err(CompileFailure {
                    log: format!(
                        "{log}\nkernel not found: NVRTC has no symbol for the name expression {}",
                        e.to_string_lossy()
                    ),
                }));
            }
            // SAFETY: non-null, NUL-terminated, valid until the program is destroyed.
            Some(
                unsafe { std::ffi::CStr::from_ptr(lowered) }
                    .to_string_lossy()
                    .into_owned(),
            )
        }
    };
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
        return Ok(Err(CompileFailure {
            log: format!("{log}\nNVRTC produced no CUBIN: is --gpu-architecture a real sm_XY?"),
        }));
    }
    Ok(Ok(Compiled {
        cubin,
        log,
        ms: start.elapsed().as_secs_f64() * 1e3,
        lowered_name,
    }))
}

/// Whether a failed compile's log says the kernel itself is missing (its name expression names nothing),
/// rather than an error in the code: a "kernel not found" verdict, not a compile error.
pub fn log_says_kernel_missing(log: &str, kernel_name: &str) -> bool {
    let base = kernel_name.rsplit("::").next().unwrap_or(kernel_name);
    log.contains("kernel not found: NVRTC has no symbol")
        || log.lines().any(|l| {
            l.contains("name expression")
                || (l.contains("is undefined")
                    && (l.contains(&format!("\"{base}\""))
                        || l.contains(&format!("\"{kernel_name}\""))))
                || (l.contains("has no member") && l.contains(&format!("\"{base}\"")))
        })
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
    fn the_register_keyword_is_dropped_only_where_it_is_used() {
        let with = full_source(
            &[],
            "__global__ void k(float *a) { register float s = a[0]; a[1] = s; }",
        );
        assert!(with.starts_with("#define register\n#line 1\n"), "{with}");
        for without in [
            "__global__ void k(int *registers) {}",
            "__global__ void k(int *my_register) {}",
        ] {
            assert!(!full_source(&[], without).contains("#define register"));
        }
    }

    #[test]
    fn a_log_about_the_kernel_name_is_a_missing_kernel_not_a_compile_error() {
        assert!(log_says_kernel_missing(
            "kernel.cu(3): error: identifier \"matrixAdd\" is undefined",
            "matrixAdd"
        ));
        assert!(log_says_kernel_missing(
            "error: namespace \"ns\" has no member \"k\"",
            "ns::k"
        ));
        assert!(!log_says_kernel_missing(
            "kernel.cu(3): error: identifier \"undefined_name\" is undefined",
            "matrixAdd"
        ));
    }

    #[test]
    fn arch_option_names_the_compute_capability() {
        assert_eq!(arch_option((9, 0)), "--gpu-architecture=sm_90");
    }

    #[test]
    #[ignore = "needs NVRTC (libnvrtc.so.13): run with --include-ignored on a CUDA machine"]
    fn compiles_to_cubin_when_nvrtc_is_present() {
        ensure_available().expect("NVRTC must be present for this test");
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
