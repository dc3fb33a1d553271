//! The ceilings a kernel is judged against: the device's theoretical DRAM bandwidth (2 × memory clock × bus
//! width / 8) and FP32 rate (SMs × FP32 lanes × clock × 2), computed by kt-profile from the driver's
//! figures (or nvidia-smi's maximum clocks where a CUDA 13 driver no longer reports them), the copy
//! bandwidth kt measures (shown beside them), and the share of the binding ceiling a measurement reaches,
//! never above 100 %.

use kt_profile::{DevicePeaks, DeviceSpec};

use crate::error::TunerError;
use crate::outcome::Measurement;
use crate::session::engine::Engine;
use crate::worker::protocol::DeviceInfo;

/// Device copy bandwidth (bytes read + written), measured once per device and cached on disk.
pub(crate) fn copy_bandwidth(e: &mut Engine, device: &DeviceInfo) -> Result<f64, TunerError> {
    let file = e
        .config
        .cache_dir
        .as_ref()
        .map(|d| d.join(format!("peak-{}.json", device.uuid)));
    if let Some(f) = &file
        && let Ok(text) = std::fs::read_to_string(f)
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(g) = v.get("copy_gbps").and_then(|g| g.as_f64())
    {
        return Ok(g);
    }
    let bytes = (device.total_memory as u64 / 16).clamp(64 << 20, 2 << 30);
    let gbps = e.link.copy_bandwidth(bytes, &mut e.queue)?;
    if let Some(f) = &file {
        if let Some(d) = f.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        let _ = std::fs::write(
            f,
            serde_json::json!({ "device": device.name, "copy_gbps": gbps, "bytes": bytes })
                .to_string(),
        );
    }
    Ok(gbps)
}

/// Share of the ceiling that binds this kernel: the larger of achieved bandwidth over the theoretical
/// bandwidth and achieved FLOP rate over the theoretical FP32 rate. A memory-bound kernel is judged by the
/// first, a compute-bound one (matmul) by the second; reporting only bandwidth would call a matmul at 65% of
/// cuBLAS "2% of peak". A share above 100 % means a ceiling is wrong (a clock the driver misreports): it
/// is clamped to 100 with a warning.
pub(crate) fn percent_of_binding_peak(
    m: &Measurement,
    peak_gbps: Option<f64>,
    peak_gflops: Option<f64>,
) -> Option<f64> {
    let memory = m.gbps.zip(peak_gbps).map(|(g, p)| 100.0 * g / p);
    let compute = m.gflops.zip(peak_gflops).map(|(g, p)| 100.0 * g / p);
    let share = match (memory, compute) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }?;
    if share > 100.0 {
        tracing::warn!(
            config = %m.config,
            "{share:.1} % of the theoretical peak: a ceiling is too low (misreported clock?); shown as 100 %"
        );
    }
    Some(share.min(100.0))
}

/// The device's theoretical ceilings: the driver's clocks and bus width, with nvidia-smi's maximum clocks
/// where the driver reports none (CUDA 13 deprecates the clock attributes). None when a figure is missing.
pub(crate) fn theoretical(ordinal: usize, compute_capability: (i32, i32)) -> Option<DevicePeaks> {
    use cudarc::driver::result;
    use cudarc::driver::sys::CUdevice_attribute as A;
    // a fake worker's run has no driver in this process, and cudarc panics on a missing library
    // SAFETY: only dlopen.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return None;
    }
    let dev = result::device::get(ordinal as i32).ok()?;
    // SAFETY: dev is a valid device handle; an attribute the driver lacks is an error, read as 0.
    let attr = |a| {
        unsafe { result::device::get_attribute(dev, a) }
            .unwrap_or(0)
            .max(0) as u32
    };
    let mut spec = DeviceSpec {
        sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_khz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        compute_capability: (
            compute_capability.0.max(0) as u32,
            compute_capability.1.max(0) as u32,
        ),
    };
    if (spec.clock_khz == 0 || spec.memory_clock_khz == 0)
        && let Some((sm_mhz, mem_mhz)) = smi_max_clocks(ordinal)
    {
        if spec.clock_khz == 0 {
            spec.clock_khz = sm_mhz * 1000;
        }
        if spec.memory_clock_khz == 0 {
            spec.memory_clock_khz = mem_mhz * 1000;
        }
    }
    peaks_from(&spec)
}

/// kt-profile's peaks of `spec`, or None when a figure they need is 0.
fn peaks_from(spec: &DeviceSpec) -> Option<DevicePeaks> {
    if spec.sm_count == 0
        || spec.clock_khz == 0
        || spec.memory_clock_khz == 0
        || spec.memory_bus_bits == 0
    {
        return None;
    }
    DevicePeaks::theoretical(spec)
}

/// The maximum SM and memory clocks (MHz) nvidia-smi reports for a device.
fn smi_max_clocks(ordinal: usize) -> Option<(u32, u32)> {
    let out = std::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=clocks.max.sm,clocks.max.memory",
            "--format=csv,noheader,nounits",
            "-i",
            &ordinal.to_string(),
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| parse_smi_clocks(&String::from_utf8_lossy(&out.stdout)))
        .flatten()
}

/// `1980, 2619` → (1980, 2619).
fn parse_smi_clocks(text: &str) -> Option<(u32, u32)> {
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let mut parts = line.split(',').map(|p| p.trim().parse::<u32>().ok());
    let sm = parts.next()??;
    let mem = parts.next()??;
    (sm > 0 && mem > 0).then_some((sm, mem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;
    use crate::space::Config;

    fn measured(gbps: Option<f64>, gflops: Option<f64>) -> Measurement {
        let mut m = Measurement::synthetic(Config(vec![]), Verdict::Ok, Some(1.0));
        m.gbps = gbps;
        m.gflops = gflops;
        m
    }

    #[test]
    fn a_compute_bound_kernel_is_judged_by_its_flop_rate() {
        // matmul: little bandwidth, most of the FP32 rate.
        let m = measured(Some(66.0), Some(33_000.0));
        let p = percent_of_binding_peak(&m, Some(4_270.0), Some(66_000.0)).unwrap();
        assert!((p - 50.0).abs() < 1e-9, "{p}");
    }

    #[test]
    fn a_memory_bound_kernel_is_judged_by_its_bandwidth() {
        let m = measured(Some(3_416.0), Some(280.0));
        let p = percent_of_binding_peak(&m, Some(4_270.0), Some(66_000.0)).unwrap();
        assert!((p - 80.0).abs() < 1e-9, "{p}");
    }

    #[test]
    fn a_measurement_above_the_ceiling_is_clamped_to_100() {
        let m = measured(Some(3_500.0), None);
        assert_eq!(
            percent_of_binding_peak(&m, Some(3_350.0), None),
            Some(100.0)
        );
    }

    #[test]
    fn theoretical_ceilings_of_an_h100_sxm() {
        let spec = DeviceSpec {
            sm_count: 132,
            clock_khz: 1_980_000,
            memory_clock_khz: 2_619_000,
            memory_bus_bits: 5120,
            compute_capability: (9, 0),
        };
        let p = peaks_from(&spec).unwrap();
        assert!((p.bandwidth_gb_s - 3352.3).abs() < 1.0, "{p:?}");
        assert!((p.fp32_gflop_s - 66_908.0).abs() < 10.0, "{p:?}");
        let no_clock = DeviceSpec {
            memory_clock_khz: 0,
            ..spec
        };
        assert_eq!(peaks_from(&no_clock), None);
    }

    #[test]
    fn nvidia_smi_clocks_parse() {
        assert_eq!(parse_smi_clocks("1980, 2619\n"), Some((1980, 2619)));
        assert_eq!(parse_smi_clocks("[N/A], [N/A]\n"), None);
        assert_eq!(parse_smi_clocks(""), None);
    }

    #[test]
    fn without_any_ceiling_there_is_no_percentage() {
        let m = measured(Some(1.0), Some(1.0));
        assert_eq!(percent_of_binding_peak(&m, None, None), None);
        assert!(percent_of_binding_peak(&m, None, Some(10.0)).is_some());
    }
}
