//! The real worker: owns the CUDA context and answers the parent's requests. Device memory and its checks
//! are in `memory`, loading, launching and timing in `launch`, what each launch request does step by
//! step in `runs`, and a profiled launch in `counted_run` (CUPTI's counters in `counters`, ncu's launch
//! facts in `launch_facts`); this file only dispatches. Every CUDA call is checked; a launch error that leaves the
//! context usable (too many resources, invalid configuration) makes the configuration invalid, anything
//! found at synchronisation (illegal address, trap) ends this process after the reply, because such a
//! context cannot be used again.

mod counted_run;
mod counters;
mod error;
mod launch;
mod launch_facts;
pub use counters::{CuptiError, find_cupti};
pub use error::GpuError;
mod memory;
mod run_setup;
mod runs;
mod timed_check;

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::{self, CUdevice_attribute as A};

use crate::worker::protocol::{DeviceInfo, Reply, Request};
use launch::Launcher;
use memory::{DeviceMemory, cuda};
use runs::ran_reply;

#[derive(Default)]
pub struct GpuWorker {
    ctx: Option<Arc<CudaContext>>,
    info: Option<DeviceInfo>,
    memory: DeviceMemory,
    launcher: Launcher,
    /// CUPTI, started by `PrepareCounters` or the first `Counters` request.
    counters: Option<counters::CounterSession>,
    /// CUPTI being started on a helper thread (`PrepareCounters`).
    counters_starting:
        Option<std::thread::JoinHandle<Result<counters::CounterSession, counters::CuptiError>>>,
}

impl GpuWorker {
    pub fn handler() -> impl FnMut(Request, Vec<u8>) -> (Reply, bool) {
        let mut w = GpuWorker::default();
        move |req, payload| w.handle(req, payload)
    }

    fn handle(&mut self, req: Request, payload: Vec<u8>) -> (Reply, bool) {
        let err = |message: String| {
            (
                Reply::Error {
                    message,
                    fatal: false,
                },
                false,
            )
        };
        match req {
            Request::Hello { ordinal } => match self.hello(ordinal) {
                Ok(info) => (Reply::Hello(info), false),
                Err(m) => (
                    Reply::Error {
                        message: m.to_string(),
                        fatal: true,
                    },
                    true,
                ),
            },
            Request::LoadUtilities => match self.memory.load_utilities(&payload) {
                Ok(()) => (Reply::Done { ms: 0.0 }, false),
                Err(m) => err(m.to_string()),
            },
            Request::Upload { test } => {
                let t = Instant::now();
                match self.memory.upload(test) {
                    Ok(()) => (
                        Reply::Done {
                            ms: t.elapsed().as_secs_f64() * 1e3,
                        },
                        false,
                    ),
                    Err(m) => err(m.to_string()),
                }
            }
            Request::Load {
                key,
                kernel,
                dynamic_shared,
            } => match self.launcher.load(key, &kernel, dynamic_shared, &payload) {
                Ok(info) => (Reply::Loaded(info), false),
                Err(m) => (Reply::LoadFailed(m.to_string()), false),
            },
            Request::Reference { run } => {
                ran_reply(runs::run(&mut self.memory, &mut self.launcher, &run, true))
            }
            Request::Run { run } => {
                ran_reply(runs::run(&mut self.memory, &mut self.launcher, &run, false))
            }
            Request::RecordOutputs { run, files, probe } => ran_reply(runs::record(
                &mut self.memory,
                &mut self.launcher,
                &run,
                &files,
                probe,
            )),
            Request::Repeat { run, runs } => ran_reply(runs::repeat(
                &mut self.memory,
                &mut self.launcher,
                &run,
                runs,
            )),
            Request::MeasureBandwidth { bytes } => match self.launcher.bandwidth(bytes as usize) {
                Ok(gbps) => (Reply::Bandwidth { gbps }, false),
                Err(m) => err(m.to_string()),
            },
            Request::MeasureFp32 => {
                let sms = self.info.as_ref().map_or(1, |i| i.sm_count.max(1) as u32);
                match self
                    .memory
                    .utility("kt_fma_rate")
                    .and_then(|f| self.launcher.fp32_rate(f, sms))
                {
                    Ok(gflops) => (Reply::Fp32 { gflops }, false),
                    Err(m) => err(m.to_string()),
                }
            }
            Request::Counters {
                run,
                metrics,
                cupti,
            } => self.counters(&run, &metrics, &cupti),
            Request::PrepareCounters { metrics, cupti } => {
                if let (Some(ctx), Some(info), None, None) = (
                    &self.ctx,
                    &self.info,
                    &self.counters,
                    &self.counters_starting,
                ) {
                    self.counters_starting = Some(counters::CounterSession::start_in_background(
                        cupti,
                        ctx.clone(),
                        info.ordinal,
                        metrics,
                    ));
                }
                (Reply::Done { ms: 0.0 }, false)
            }
            Request::Unload { key } => {
                self.launcher.unload(&key);
                (Reply::Done { ms: 0.0 }, false)
            }
            Request::Shutdown => (Reply::Done { ms: 0.0 }, true),
        }
    }

    fn counters(
        &mut self,
        run: &crate::worker::protocol::RunRequest,
        metrics: &[String],
        cupti: &std::path::Path,
    ) -> (Reply, bool) {
        let (Some(ctx), Some(info)) = (&self.ctx, &self.info) else {
            return (
                Reply::Error {
                    message: "no CUDA context: Hello first".into(),
                    fatal: false,
                },
                false,
            );
        };
        let (ctx, ordinal) = (ctx.cu_ctx(), info.ordinal);
        if let Some(starting) = self.counters_starting.take() {
            match starting.join() {
                Ok(Ok(session)) => self.counters = Some(session),
                Ok(Err(e)) => {
                    return (
                        Reply::Error {
                            message: e.to_string(),
                            fatal: false,
                        },
                        false,
                    );
                }
                Err(_) => {
                    return (
                        Reply::Error {
                            message: "starting CUPTI panicked".into(),
                            fatal: false,
                        },
                        false,
                    );
                }
            }
        }
        match counted_run::count(
            &mut self.memory,
            &mut self.launcher,
            &mut self.counters,
            ctx,
            ordinal,
            run,
            metrics,
            cupti,
        ) {
            Ok(report) => (Reply::Counted(report), false),
            Err(launch::LaunchError::Invalid(e)) => (
                Reply::Error {
                    message: e.to_string(),
                    fatal: false,
                },
                false,
            ),
            Err(launch::LaunchError::Crashed(e)) => (
                Reply::Error {
                    message: e.to_string(),
                    fatal: true,
                },
                true,
            ),
        }
    }

    fn hello(&mut self, ordinal: usize) -> Result<DeviceInfo, GpuError> {
        let t = Instant::now();
        // SAFETY: only dlopen.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::NoDriver);
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| cuda("creating the CUDA context", e))?;
        let a = |attr| ctx.attribute(attr).map_err(|e| cuda("device attribute", e));
        let uuid = ctx.uuid().map_err(|e| cuda("device uuid", e))?;
        let b: Vec<u8> = uuid.bytes.iter().map(|&c| c as u8).collect();
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        let uuid = format!(
            "GPU-{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        );
        let mut driver_version = 0;
        // SAFETY: writes one int.
        let _ = unsafe { sys::cuDriverGetVersion(&mut driver_version) };
        // Absent attributes leave the id empty rather than failing the worker.
        let pci_bus_id = match (
            a(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
            a(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
            a(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
        ) {
            (Ok(domain), Ok(bus), Ok(device)) => pci_bus_id(domain, bus, device),
            _ => String::new(),
        };
        let info = DeviceInfo {
            ordinal,
            name: ctx.name().map_err(|e| cuda("device name", e))?,
            uuid,
            pci_bus_id,
            compute_capability: ctx
                .compute_capability()
                .map_err(|e| cuda("compute capability", e))?,
            sm_count: a(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_shared_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_per_block_optin: a(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            registers_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            l2_bytes: a(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            total_memory: ctx.total_mem().map_err(|e| cuda("total memory", e))?,
            driver_version,
            // Deprecated in newer CUDA releases: absent means "no compute ceiling", not an error.
            clock_khz: a(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).unwrap_or(0),
            context_ms: 0.0,
        };
        self.launcher.init(&info)?;
        self.memory.init(info.sm_count)?;
        self.ctx = Some(ctx);
        let info = DeviceInfo {
            context_ms: t.elapsed().as_secs_f64() * 1e3,
            ..info
        };
        self.info = Some(info.clone());
        Ok(info)
    }
}

/// The PCI address as nvidia-smi prints it (`00000000:1B:00.0`), so a run record can be matched to it.
fn pci_bus_id(domain: i32, bus: i32, device: i32) -> String {
    format!("{domain:08X}:{bus:02X}:{device:02X}.0")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pci_bus_id_reads_as_nvidia_smi_prints_it() {
        assert_eq!(super::pci_bus_id(0, 0x1b, 0), "00000000:1B:00.0");
    }
}
