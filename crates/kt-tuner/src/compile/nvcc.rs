//! nvcc as the second compiler: where NVRTC rejects a kernel's unit that nvcc accepts (a system header NVRTC
//! lacks, a host-side construct kt could not leave out), and the machine has nvcc, the same program —
//! the same source with its defines, the same `-I` directories and flags, the same architecture — is
//! compiled with `nvcc -cubin`. Only on NVRTC's failure: a run whose kernels NVRTC compiles never starts
//! nvcc, so the tuner's speed is unchanged.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::compile::nvrtc::{CompileFailure, Compiled, Program};

/// NVRTC-only options nvcc does not take.
const NVRTC_ONLY: &[&str] = &[
    "-default-device",
    "--device-as-default-execution-space",
    "-dw",
    "--disable-warnings",
];

/// nvcc of the CUDA toolkit (`CUDA_HOME`/`CUDA_PATH`/`CUDA_ROOT`, `/usr/local/cuda`) or on `PATH`.
pub fn find() -> Option<PathBuf> {
    let toolkits = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .chain([PathBuf::from("/usr/local/cuda")])
        .map(|d| d.join("bin").join("nvcc"));
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("nvcc"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    toolkits.chain(on_path).find(|p| p.is_file())
}

/// How the log of a module nvcc compiled begins.
pub const NVCC_LOG_PREFIX: &str = "compiled with nvcc";

/// Says once per process that nvcc compiled what NVRTC could not.
static TOLD: AtomicBool = AtomicBool::new(false);

/// Program families (one kernel's configurations) that NVRTC failed on and nvcc compiled. NVRTC fails on
/// what a unit includes (thrust, cub, a host header), not on a configuration, and parsing those headers
/// costs it seconds a configuration; so the family's later configurations go to nvcc first.
static NVCC_FAMILIES: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

fn needs_nvcc(p: &Program) -> bool {
    p.family
        .is_some_and(|f| NVCC_FAMILIES.lock().is_ok_and(|set| set.contains(&f)))
}

fn remember_needs_nvcc(p: &Program) {
    if let (Some(f), Ok(mut set)) = (p.family, NVCC_FAMILIES.lock()) {
        set.insert(f);
    }
}

/// NVRTC first; on its failure, nvcc when there is one. A failure of both keeps NVRTC's log (the one the
/// user's flags were written for) with nvcc's after it. A configuration of a kernel whose earlier
/// configuration only nvcc compiled goes to nvcc first (NVRTC still gets it when nvcc fails).
pub fn compile_with_fallback(
    p: &Program,
    nvcc: Option<&Path>,
) -> Result<Result<Compiled, CompileFailure>, crate::error::TunerError> {
    if let Some(nvcc) = nvcc.filter(|_| needs_nvcc(p))
        && let Ok(mut c) = compile(nvcc, p)
    {
        c.log = format!(
            "{NVCC_LOG_PREFIX}: NVRTC failed on an earlier configuration of this kernel\n{}",
            c.log
        );
        return Ok(Ok(c));
    }
    let nvrtc_failure = match crate::compile::nvrtc::compile_program(p)? {
        Ok(c) => return Ok(Ok(c)),
        Err(f) => f,
    };
    let Some(nvcc) = nvcc else {
        return Ok(Err(nvrtc_failure));
    };
    match compile(nvcc, p) {
        Ok(mut c) => {
            remember_needs_nvcc(p);
            let first_error = nvrtc_failure
                .log
                .lines()
                .find(|l| l.contains("error"))
                .unwrap_or("")
                .trim()
                .to_string();
            if !TOLD.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "NVRTC could not compile the kernel ({first_error}); compiled it with {} instead (same source, defines, include directories and architecture)",
                    nvcc.display()
                );
            }
            c.log = format!(
                "{NVCC_LOG_PREFIX}: NVRTC failed with: {first_error}\n{}",
                c.log
            );
            Ok(Ok(c))
        }
        Err(f) => Ok(Err(CompileFailure {
            log: format!("{}\n\nnvcc failed too:\n{}", nvrtc_failure.log, f.log),
        })),
    }
}

/// Compiles `p` with `nvcc -cubin`: its source (defines in front) in a temporary directory, its options
/// less NVRTC's own, and the name expression instantiated so that a template kernel is in the CUBIN.
pub fn compile(nvcc: &Path, p: &Program) -> Result<Compiled, CompileFailure> {
    let start = Instant::now();
    let fail = |log: String| CompileFailure { log };
    let dir =
        tempfile::tempdir().map_err(|e| fail(format!("nvcc: no temporary directory: {e}")))?;
    let src = dir.path().join("kernel.cu");
    let out = dir.path().join("kernel.cubin");
    std::fs::write(&src, source_for_nvcc(p))
        .map_err(|e| fail(format!("nvcc: cannot write {}: {e}", src.display())))?;
    let output = Command::new(nvcc)
        .arg("-cubin")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .args(options_for_nvcc(&p.options))
        .output()
        .map_err(|e| fail(format!("cannot run {}: {e}", nvcc.display())))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
    .trim()
    .to_string();
    if !output.status.success() {
        return Err(fail(log));
    }
    let cubin =
        std::fs::read(&out).map_err(|e| fail(format!("{log}\nnvcc wrote no CUBIN: {e}")))?;
    let lowered_name = match &p.name_expression {
        None => None,
        Some(expr) => Some(kernel_symbol(&cubin, expr).ok_or_else(|| {
            fail(format!(
                "{log}\nkernel not found: the CUBIN nvcc produced has no kernel for {expr}"
            ))
        })?),
    };
    Ok(Compiled {
        cubin,
        log,
        ms: start.elapsed().as_secs_f64() * 1e3,
        lowered_name,
    })
}

/// The source with a line that takes the kernel's address, which makes nvcc emit a template kernel's
/// instantiation (NVRTC does that for a name expression).
fn source_for_nvcc(p: &Program) -> String {
    match &p.name_expression {
        Some(expr) if expr.contains('<') => format!(
            "{}\n#line 1 \"kt-instantiation\"\nstatic const void *kt_instantiation_ = (const void *)({expr});\n",
            p.source
        ),
        _ => p.source.clone(),
    }
}

fn options_for_nvcc(options: &[String]) -> Vec<String> {
    options
        .iter()
        .filter(|o| !NVRTC_ONLY.contains(&o.as_str()))
        .cloned()
        .collect()
}

/// The symbol of the kernel a name expression (`&k`, `&ns::k`, `&k<16, float>`) names, among the CUBIN's
/// functions.
fn kernel_symbol(cubin: &[u8], expr: &str) -> Option<String> {
    symbol_named(&text_symbols(cubin), expr)
}

/// The function named by `expr`: the plain name (`extern "C"`), else the first mangled name that holds the
/// kernel's length-prefixed name. Never another kernel: a unit whose only kernel has a different name has
/// no symbol for `expr` (taking that kernel would launch the wrong code under the asked name).
fn symbol_named(symbols: &[String], expr: &str) -> Option<String> {
    let path = expr.trim_start_matches('&');
    let path = path.split('<').next().unwrap_or(path);
    let name = path.rsplit("::").next().unwrap_or(path).trim();
    let tag = format!("{}{name}", name.len());
    symbols
        .iter()
        .find(|s| *s == name)
        .or_else(|| symbols.iter().find(|s| s.contains(&tag)))
        .cloned()
}

/// The functions of a CUBIN: the names of its `.text.<symbol>` sections.
fn text_symbols(cubin: &[u8]) -> Vec<String> {
    use object::{Object as _, ObjectSection as _};
    let Ok(file) = object::File::parse(cubin) else {
        return Vec::new();
    };
    file.sections()
        .filter_map(|s| s.name().ok()?.strip_prefix(".text.").map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvrtc_only_options_are_left_out_and_the_rest_kept() {
        let o = options_for_nvcc(&[
            "--gpu-architecture=sm_90".into(),
            "-I/x".into(),
            "-default-device".into(),
            "-DN=4".into(),
        ]);
        assert_eq!(o, vec!["--gpu-architecture=sm_90", "-I/x", "-DN=4"]);
    }

    #[test]
    fn a_template_kernel_is_instantiated_for_nvcc() {
        let mut p = Program::new("template <int B> __global__ void k(float *x) {}", vec![]);
        p.name_expression = Some("&k<16>".into());
        assert!(source_for_nvcc(&p).contains("(const void *)(&k<16>)"));
        p.name_expression = Some("&k".into());
        assert_eq!(source_for_nvcc(&p), p.source);
    }

    #[test]
    fn the_symbol_is_the_named_kernel_never_the_only_other_one() {
        let syms = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            symbol_named(&syms(&["scale"]), "&scale").as_deref(),
            Some("scale")
        );
        assert_eq!(symbol_named(&syms(&["scale"]), "&scale_missing"), None);
        assert_eq!(
            symbol_named(&syms(&["_Z5scaleILi16EEvPf", "_Z3addPf"]), "&scale<16>").as_deref(),
            Some("_Z5scaleILi16EEvPf")
        );
        assert_eq!(
            symbol_named(&syms(&["_ZN2ns3addEPf"]), "&ns::add").as_deref(),
            Some("_ZN2ns3addEPf")
        );
        // an exact extern "C" name wins over a mangled name that happens to contain it
        assert_eq!(
            symbol_named(&syms(&["_Z3addPf", "add"]), "&add").as_deref(),
            Some("add")
        );
    }

    fn compile_here(src: &str, expr: Option<&str>) -> Option<Result<Compiled, CompileFailure>> {
        let nvcc = find()?;
        let mut p = Program::new(src, vec!["--gpu-architecture=sm_90".into()]);
        p.name_expression = expr.map(str::to_string);
        Some(compile(&nvcc, &p))
    }

    #[test]
    #[ignore = "needs nvcc"]
    fn nvcc_compiles_what_nvrtc_cannot_and_finds_the_template_kernel() {
        // <iostream> is a host header NVRTC has no copy of
        let src = "#include <iostream>\ntemplate <int B> __global__ void scale(float *x) { x[threadIdx.x] *= B; }\n";
        let c = compile_here(src, Some("&scale<16>"))
            .expect("nvcc on this machine")
            .unwrap();
        assert!(!c.cubin.is_empty());
        assert_eq!(c.lowered_name.as_deref(), Some("_Z5scaleILi16EEvPf"));
        let bad = compile_here("__global__ void k() { undefined_name; }", Some("&k"))
            .unwrap()
            .unwrap_err();
        assert!(bad.log.contains("undefined_name"), "{}", bad.log);
    }

    #[test]
    #[ignore = "needs nvcc"]
    fn a_failure_of_both_compilers_keeps_nvrtcs_log_first() {
        let nvcc = find().expect("nvcc on this machine");
        let mut p = Program::new(
            "__global__ void k(float *x) { x[0] = not_declared; }",
            vec!["--gpu-architecture=sm_90".into()],
        );
        p.name_expression = Some("&k".into());
        let f = compile_with_fallback(&p, Some(&nvcc)).unwrap().unwrap_err();
        let nvrtc_at = f.log.find("not_declared").unwrap();
        let nvcc_at = f.log.find("nvcc failed too").unwrap();
        assert!(nvrtc_at < nvcc_at, "{}", f.log);
    }

    #[test]
    fn a_family_that_needed_nvcc_goes_to_nvcc_first_and_others_do_not() {
        let at = |family, block: u32| Program {
            source: format!("#define B {block}\n#include <iostream>\n"),
            family,
            ..Program::default()
        };
        let family = Some(0x5eed_0001);
        assert!(!needs_nvcc(&at(family, 16)));
        remember_needs_nvcc(&at(family, 16));
        assert!(
            needs_nvcc(&at(family, 32)),
            "another configuration of the kernel"
        );
        assert!(!needs_nvcc(&at(Some(0x5eed_0002), 32)), "another kernel");
        remember_needs_nvcc(&at(None, 16));
        assert!(
            !needs_nvcc(&at(None, 16)),
            "a program without a family is never remembered"
        );
    }
}
