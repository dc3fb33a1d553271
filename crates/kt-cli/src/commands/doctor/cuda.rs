//! CUDA driver, GPU and NVRTC lines: kt-tuner probes them (`cuda_probe`), this file turns them into checks.

use super::Check;

pub fn probe() -> Vec<Check> {
    kt_tuner::host::cuda_probe::probe()
        .into_iter()
        .map(|c| match c.fix {
            Some(fix) if !c.ok => Check::missing(c.name, c.detail, fix),
            _ => Check::ok(c.name, c.detail),
        })
        .collect()
}
