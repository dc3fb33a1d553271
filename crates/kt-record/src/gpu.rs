//! The GPU a run's kernels ran on, as `run.json` and `result.json` record it: enough to tell two GPUs of one
//! machine apart (the PCI bus id, which `nvidia-smi` prints in the same form) and to say which of the machine's
//! GPUs the process was given (`CUDA_VISIBLE_DEVICES`).

use serde::{Deserialize, Serialize};

/// One GPU, as the tuner's worker reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuRecord {
    pub name: String,
    /// `00000000:1B:00.0` (domain:bus:device.function); empty when the driver did not say.
    #[serde(default)]
    pub pci_bus_id: String,
    #[serde(default)]
    pub uuid: String,
    /// `9.0`.
    pub compute_capability: String,
    /// The CUDA driver's version, `13.0`.
    pub driver_version: String,
    /// The device's ordinal among those the process sees.
    #[serde(default)]
    pub ordinal: usize,
    /// `CUDA_VISIBLE_DEVICES` of the process (None: not set, every GPU visible).
    #[serde(default)]
    pub cuda_visible_devices: Option<String>,
}

impl GpuRecord {
    /// One line for the report: `NVIDIA H200 (PCI 00000000:1B:00.0, compute 9.0, driver 13.0, CUDA_VISIBLE_DEVICES=1)`.
    pub fn summary(&self) -> String {
        let pci = if self.pci_bus_id.is_empty() {
            "PCI bus id unknown".to_string()
        } else {
            format!("PCI {}", self.pci_bus_id)
        };
        let visible = match &self.cuda_visible_devices {
            Some(v) => format!("CUDA_VISIBLE_DEVICES={v}"),
            None => "CUDA_VISIBLE_DEVICES unset".to_string(),
        };
        format!(
            "{} ({pci}, compute {}, driver {}, device {} of those visible, {visible})",
            self.name, self.compute_capability, self.driver_version, self.ordinal
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_bus_id_is_said() {
        let r = GpuRecord {
            name: "NVIDIA H100".into(),
            pci_bus_id: String::new(),
            uuid: String::new(),
            compute_capability: "9.0".into(),
            driver_version: "13.0".into(),
            ordinal: 1,
            cuda_visible_devices: None,
        };
        assert_eq!(
            r.summary(),
            "NVIDIA H100 (PCI bus id unknown, compute 9.0, driver 13.0, device 1 of those visible, CUDA_VISIBLE_DEVICES unset)"
        );
    }
}
