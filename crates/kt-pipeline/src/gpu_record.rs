//! The GPU record (kt-record's [`GpuRecord`]) of the device the tuner's worker reported.

pub use kt_record::GpuRecord;

/// The record of `device`, with this process's `CUDA_VISIBLE_DEVICES`.
pub fn gpu_record(device: &kt_tuner::worker::protocol::DeviceInfo) -> GpuRecord {
    with_visible(device, std::env::var("CUDA_VISIBLE_DEVICES").ok())
}

fn with_visible(
    device: &kt_tuner::worker::protocol::DeviceInfo,
    cuda_visible_devices: Option<String>,
) -> GpuRecord {
    let (major, minor) = device.compute_capability;
    let v = device.driver_version;
    GpuRecord {
        name: device.name.clone(),
        pci_bus_id: device.pci_bus_id.clone(),
        uuid: device.uuid.clone(),
        compute_capability: format!("{major}.{minor}"),
        driver_version: format!("{}.{}", v / 1000, (v % 1000) / 10),
        ordinal: device.ordinal,
        cuda_visible_devices,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    pub(crate) fn device() -> kt_tuner::worker::protocol::DeviceInfo {
        kt_tuner::worker::protocol::DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H200".into(),
            uuid: "GPU-1234".into(),
            pci_bus_id: "00000000:1B:00.0".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            max_threads_per_block: 1024,
            max_threads_per_sm: 2048,
            max_shared_per_block: 48 << 10,
            max_shared_per_block_optin: 227 << 10,
            registers_per_block: 65536,
            l2_bytes: 0,
            total_memory: 0,
            driver_version: 12080,
            clock_khz: 0,
            context_ms: 0.0,
        }
    }

    #[test]
    fn the_record_names_the_gpu_its_bus_id_and_the_visible_devices() {
        let r = with_visible(&device(), Some("1".into()));
        assert_eq!(r.compute_capability, "9.0");
        assert_eq!(r.driver_version, "12.8");
        let line = r.summary();
        assert!(
            line.contains("NVIDIA H200")
                && line.contains("PCI 00000000:1B:00.0")
                && line.contains("CUDA_VISIBLE_DEVICES=1"),
            "{line}"
        );
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["pci_bus_id"], "00000000:1B:00.0");
        let unset = with_visible(&device(), None);
        assert!(unset.summary().contains("CUDA_VISIBLE_DEVICES unset"));
    }
}
