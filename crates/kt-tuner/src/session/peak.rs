//! The ceilings a kernel is judged against: the device's copy bandwidth (measured once per device by the
//! worker and cached on disk) and its theoretical FP32 rate, and the share of the binding one a
//! measurement reaches.

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

/// Share of the ceiling that binds this kernel: the larger of achieved bandwidth over the measured copy
/// bandwidth and achieved FLOP rate over the theoretical FP32 rate. A memory-bound kernel is judged by the
/// first, a compute-bound one (matmul) by the second; reporting only bandwidth would call a matmul at 65% of
/// cuBLAS "2% of peak".
pub(crate) fn percent_of_binding_peak(
    m: &Measurement,
    peak_gbps: Option<f64>,
    peak_gflops: Option<f64>,
) -> Option<f64> {
    let memory = m.gbps.zip(peak_gbps).map(|(g, p)| 100.0 * g / p);
    let compute = m.gflops.zip(peak_gflops).map(|(g, p)| 100.0 * g / p);
    match (memory, compute) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
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
    fn without_any_ceiling_there_is_no_percentage() {
        let m = measured(Some(1.0), Some(1.0));
        assert_eq!(percent_of_binding_peak(&m, None, None), None);
        assert!(percent_of_binding_peak(&m, None, Some(10.0)).is_some());
    }
}
