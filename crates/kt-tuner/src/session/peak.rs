//! The ceilings a kernel is judged against: the device's theoretical DRAM bandwidth (2 × memory clock × bus
//! width / 8) and FP32 rate (SMs × FP32 lanes × clock × 2), computed by kt-profile from the driver's
//! figures (or nvidia-smi's maximum clocks where a CUDA 13 driver no longer reports them), the copy
//! bandwidth and FMA rate kt measures once per device (which confirm each ceiling or not,
//! `crate::check::floor::Ceilings`), and the
//! share of the binding ceiling a measurement reaches, as measured: never clamped, a share above 100 %
//! carries a note saying what it means.

use kt_profile::{DevicePeaks, DeviceSpec};

use crate::check::floor::{Ceiling, Ceilings};
use crate::error::TunerError;
use crate::model::outcome::Measurement;
use crate::session::engine::Engine;
use crate::worker::protocol::DeviceInfo;

/// Device copy bandwidth (bytes read + written), measured once per device and cached on disk.
pub(crate) fn copy_bandwidth(e: &mut Engine, device: &DeviceInfo) -> Result<f64, TunerError> {
    let bytes = (device.total_memory as u64 / 16).clamp(64 << 20, 2 << 30);
    cached_figure(e, device, "peak", "copy_gbps", |e| {
        e.link.copy_bandwidth(bytes, &mut e.queue)
    })
}

/// The FP32 rate kt's FMA kernel reaches (GFLOP/s), measured once per device and cached on disk: what
/// confirms the theoretical FP32 rate or not. Needs kt's utility kernels in the worker (after `prepare`).
pub(crate) fn fp32_rate(e: &mut Engine, device: &DeviceInfo) -> Result<f64, TunerError> {
    cached_figure(e, device, "fp32", "fp32_gflops", |e| {
        e.link.fp32_rate(&mut e.queue)
    })
}

/// A figure of the device under `key` in `<cache>/<stem>-<uuid>.json`, measured when the file lacks it.
fn cached_figure(
    e: &mut Engine,
    device: &DeviceInfo,
    stem: &str,
    key: &str,
    measure: impl FnOnce(&mut Engine) -> Result<f64, TunerError>,
) -> Result<f64, TunerError> {
    let file = e
        .config
        .cache_dir
        .as_ref()
        .map(|d| d.join(format!("{stem}-{}.json", device.uuid)));
    if let Some(f) = &file
        && let Ok(text) = std::fs::read_to_string(f)
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(g) = v.get(key).and_then(|g| g.as_f64())
    {
        return Ok(g);
    }
    let value = measure(e)?;
    if let Some(f) = &file {
        if let Some(d) = f.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        let _ = std::fs::write(
            f,
            serde_json::json!({ "device": device.name, key: value }).to_string(),
        );
    }
    Ok(value)
}

/// What a measurement's share of peak is judged against.
pub(crate) struct PeakCeilings {
    /// The bandwidth ceiling, confirmed by kt's copy or not.
    pub memory: Ceilings,
    /// The FP32 rate (GFLOP/s): the theoretical one, confirmed by kt's FMA kernel or not (as the bandwidth
    /// is by its copy: `Ceilings::from_figures` applies to both).
    pub fp32: Ceiling,
    /// The first test's `bytes` (the test the rates are computed on), when the sidecar gives them.
    pub bytes_per_test0: Option<f64>,
}

/// A share of peak and, above 100 %, what it means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PeakShare {
    pub percent: f64,
    pub note: Option<String>,
}

/// Share of the ceiling that binds this kernel: the larger of achieved bandwidth over the bandwidth ceiling
/// and achieved FLOP rate over the FP32 rate. A memory-bound kernel is judged by the first, a compute-bound
/// one (matmul) by the second; reporting only bandwidth would call a matmul at 65% of cuBLAS "2% of peak".
/// Reported as measured: a share above 100 % is evidence about the kernel (it moved or computed less than
/// its sidecar counts) or, only where kt's measurement did not confirm it, about the ceiling; the note
/// says which.
pub(crate) fn share_of_peak(m: &Measurement, peaks: &PeakCeilings) -> Option<PeakShare> {
    let memory = m
        .gbps
        .zip(peaks.memory.bandwidth_gbps)
        .map(|(g, p)| 100.0 * g / p);
    let compute = m.gflops.zip(peaks.fp32.value).map(|(g, p)| 100.0 * g / p);
    let percent = match (memory, compute) {
        (Some(a), Some(b)) => a.max(b),
        (a, b) => a.or(b)?,
    };
    let mut notes = Vec::new();
    if let Some(share) = memory.filter(|s| *s > 100.0) {
        notes.push(memory_note(share, peaks));
    }
    if let Some(share) = compute.filter(|s| *s > 100.0) {
        let ceiling = if peaks.fp32.confirmed {
            ""
        } else {
            ", or the unconfirmed ceiling is too low"
        };
        notes.push(format!(
            "{share:.1} % of the FP32 rate ({}): the kernel did fewer floating-point operations than its \
             sidecar's `flops` counts (it skips work the reference does, such as an interior it never \
             iterates, or `flops` is an upper bound){ceiling}",
            peaks.fp32.basis
        ));
    }
    if !notes.is_empty() {
        tracing::warn!(config = %m.config, "{}", notes.join("; "));
    }
    Some(PeakShare {
        percent,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}

/// What a bandwidth above the ceiling means: data served from L2, a kernel that moved less than its
/// `bytes`, or (only when unconfirmed) a ceiling that is too low.
fn memory_note(share: f64, peaks: &PeakCeilings) -> String {
    let c = &peaks.memory;
    if peaks
        .bytes_per_test0
        .is_some_and(|b| b <= c.l2_bytes as f64)
    {
        return format!(
            "{share:.1} % of the memory bandwidth ({}): the test's data fits in the L2, which serves it \
             faster than memory",
            c.basis
        );
    }
    if c.confirmed {
        format!(
            "{share:.1} % of the memory bandwidth ({}): the kernel moved less than its sidecar's `bytes` \
             (it skips traffic the reference makes, or `bytes` overstates it)",
            c.basis
        )
    } else {
        format!(
            "{share:.1} % of the memory bandwidth ({}): the kernel moved less than its sidecar's `bytes`, \
             or the unconfirmed ceiling is too low",
            c.basis
        )
    }
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
    use crate::model::outcome::Verdict;
    use crate::model::space::Config;

    fn measured(gbps: Option<f64>, gflops: Option<f64>) -> Measurement {
        let mut m = Measurement::synthetic(Config(vec![]), Verdict::Ok, Some(1.0));
        m.gbps = gbps;
        m.gflops = gflops;
        m
    }

    fn peaks(bandwidth: Option<f64>, copy: Option<f64>, fp32: Option<f64>) -> PeakCeilings {
        PeakCeilings {
            memory: Ceilings::from_figures(bandwidth, copy, 50 << 20),
            fp32: Ceiling::confirm(fp32, None, "GFLOP/s", "kt's FMA kernel"),
            bytes_per_test0: Some(1e9),
        }
    }

    #[test]
    fn a_compute_bound_kernel_is_judged_by_its_flop_rate() {
        // matmul: little bandwidth, most of the FP32 rate.
        let m = measured(Some(66.0), Some(33_000.0));
        let p = share_of_peak(&m, &peaks(Some(4_270.0), None, Some(66_000.0))).unwrap();
        assert!((p.percent - 50.0).abs() < 1e-9, "{p:?}");
        assert_eq!(p.note, None);
    }

    #[test]
    fn a_memory_bound_kernel_is_judged_by_its_bandwidth() {
        let m = measured(Some(3_416.0), Some(280.0));
        let p = share_of_peak(&m, &peaks(Some(4_270.0), None, Some(66_000.0))).unwrap();
        assert!((p.percent - 80.0).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn a_share_above_a_confirmed_ceiling_is_reported_as_measured_and_blames_the_kernel() {
        let m = measured(Some(3_500.0), None);
        let p = share_of_peak(&m, &peaks(Some(3_350.0), Some(3_000.0), None)).unwrap();
        assert!((p.percent - 104.477).abs() < 1e-2, "never clamped: {p:?}");
        let note = p.note.unwrap();
        assert!(
            note.contains("moved less than its sidecar's `bytes`")
                && !note.contains("ceiling is too low"),
            "{note}"
        );
        // unconfirmed (no copy measured): the ceiling may be blamed
        let p = share_of_peak(&m, &peaks(Some(3_350.0), None, None)).unwrap();
        assert!(p.note.unwrap().contains("unconfirmed ceiling is too low"));
    }

    #[test]
    fn a_kernel_that_skips_work_reports_its_flop_share_above_100_with_a_note() {
        // a mandelbrot that never iterates the set's interior: 180 % of the FP32 peak
        let m = measured(Some(1.0), Some(118_800.0));
        let mut confirmed = peaks(Some(4_270.0), Some(4_000.0), None);
        confirmed.fp32 =
            Ceiling::confirm(Some(66_000.0), Some(60_000.0), "GFLOP/s", "kt's FMA kernel");
        let p = share_of_peak(&m, &confirmed).unwrap();
        assert!((p.percent - 180.0).abs() < 1e-9, "{p:?}");
        let note = p.note.unwrap();
        assert!(
            note.contains("skips work the reference does") && !note.contains("ceiling is too low"),
            "{note}"
        );
        // the theoretical rate alone may be blamed
        let p = share_of_peak(&m, &peaks(Some(4_270.0), Some(4_000.0), Some(66_000.0))).unwrap();
        assert!(p.note.unwrap().contains("unconfirmed ceiling is too low"));
    }

    #[test]
    fn data_that_fits_in_l2_explains_a_bandwidth_above_memory() {
        let m = measured(Some(6_000.0), None);
        let mut small = peaks(Some(3_350.0), Some(3_000.0), None);
        small.bytes_per_test0 = Some(1e6);
        let p = share_of_peak(&m, &small).unwrap();
        assert!(p.note.unwrap().contains("fits in the L2"));
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
        assert_eq!(share_of_peak(&m, &peaks(None, None, None)), None);
        assert!(share_of_peak(&m, &peaks(None, None, Some(10.0))).is_some());
    }
}
