//! What this machine offers the tuner: the CUDA driver, its GPUs and NVRTC, each a line of `kt doctor` with
//! how to fix what is missing. cudarc loads the libraries at run time (`dynamic-loading`), so kt starts on
//! machines without CUDA; but its first call panics when a library is absent, hence the presence checks.

use cudarc::driver::{CudaContext, sys::CUdevice_attribute};

/// One finding: what was checked, what was found, and how to fix it when it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// `cuda driver`, `gpu` or `nvrtc`.
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
    /// How to fix it; None when it is ok.
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Self {
        Self {
            name,
            ok: true,
            detail: detail.into(),
            fix: None,
        }
    }

    fn missing(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name,
            ok: false,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Whether the CUDA driver library can be loaded (no CUDA call is made).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the driver library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Why this machine cannot run kernels (no driver, a driver that does not start, no device, no NVRTC), or
/// `None` when it can. Cheap: no context is made, so a run can ask before it makes data only a GPU would use.
pub fn gpu_missing() -> Option<String> {
    if !driver_present() {
        return Some("no CUDA driver on this machine (libcuda.so.1 not found)".into());
    }
    if let Err(err) = cudarc::driver::result::init() {
        return Some(format!("the CUDA driver did not initialise ({err})"));
    }
    if !matches!(CudaContext::device_count(), Ok(n) if n > 0) {
        return Some(
            "the CUDA driver reports no device (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)"
                .into(),
        );
    }
    // SAFETY: only tries to dlopen libnvrtc.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Some("NVRTC (libnvrtc.so.13) not found".into());
    }
    None
}

/// The driver, every GPU it reports, and NVRTC. Never panics: a missing library is a finding.
pub fn probe() -> Vec<Check> {
    let mut checks = Vec::new();
    checks.extend(probe_driver());
    checks.push(probe_nvrtc());
    checks
}

fn probe_driver() -> Vec<Check> {
    // SAFETY: only tries to dlopen the driver library; no CUDA call is made.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return vec![
            Check::missing(
                "cuda driver",
                "libcuda.so not found",
                "install the NVIDIA driver (it provides libcuda.so.1); on a machine without a GPU kt can still inspect kernels and run tests that need no GPU",
            ),
            Check::missing(
                "gpu",
                "no CUDA driver, so no GPU can be used",
                "see the cuda driver line",
            ),
        ];
    }
    if let Err(err) = cudarc::driver::result::init() {
        return vec![
            Check::missing(
                "cuda driver",
                format!("libcuda found but cuInit failed: {err}"),
                "check `nvidia-smi`; the driver and kernel module versions must match",
            ),
            Check::missing(
                "gpu",
                "the driver did not initialise",
                "see the cuda driver line",
            ),
        ];
    }
    let mut version: i32 = 0;
    // SAFETY: cuDriverGetVersion writes one int; the library is present and initialised.
    let version_text = match unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) } {
        cudarc::driver::sys::CUresult::CUDA_SUCCESS => {
            format!("CUDA {}.{}", version / 1000, (version % 1000) / 10)
        }
        other => format!("version unknown ({other:?})"),
    };
    let mut checks = vec![Check::ok(
        "cuda driver",
        format!("libcuda found, supports {version_text}"),
    )];
    match CudaContext::device_count() {
        Ok(0) | Err(_) => checks.push(Check::missing(
            "gpu",
            "the driver reports no CUDA device",
            "run on a machine with an NVIDIA GPU (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)",
        )),
        Ok(count) => {
            for ordinal in 0..count as usize {
                checks.push(describe_gpu(ordinal));
            }
        }
    }
    checks
}

fn describe_gpu(ordinal: usize) -> Check {
    let facts = (|| -> Result<String, cudarc::driver::DriverError> {
        let ctx = CudaContext::new(ordinal)?;
        let name = ctx.name()?;
        let (major, minor) = ctx.compute_capability()?;
        let mem_gib = ctx.total_mem()? as f64 / (1u64 << 30) as f64;
        let sms = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        Ok(format!(
            "#{ordinal} {name}, compute capability {major}.{minor}, {mem_gib:.1} GiB, {sms} SMs"
        ))
    })();
    match facts {
        Ok(text) => Check::ok("gpu", text),
        Err(err) => Check::missing(
            "gpu",
            format!("#{ordinal}: {err}"),
            "check `nvidia-smi`; another process may hold the GPU in exclusive mode",
        ),
    }
}

fn probe_nvrtc() -> Check {
    // SAFETY: only tries to dlopen libnvrtc.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Check::missing(
            "nvrtc",
            "libnvrtc.so not found",
            "install the CUDA toolkit's NVRTC (e.g. the cuda-nvrtc-13-0 package or pip's nvidia-cuda-nvrtc) and make sure the loader finds it (LD_LIBRARY_PATH)",
        );
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints; the library is present.
    match unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) } {
        cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS => {
            Check::ok("nvrtc", format!("NVRTC {major}.{minor}"))
        }
        other => Check::missing(
            "nvrtc",
            format!("libnvrtc found but nvrtcVersion failed: {other:?}"),
            "reinstall the CUDA toolkit's NVRTC",
        ),
    }
}
