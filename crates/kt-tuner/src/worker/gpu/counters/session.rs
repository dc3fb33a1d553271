//! CUPTI kept started in the worker, each metric set's configuration made once, and one set collected over
//! the replays of a launch.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use cudarc::driver::sys::CUcontext;

use super::Counters;
use super::cupti_objects::{
    Host, Names, ProfilerSession, RangeProfiler, chip_name, counter_availability, known_metrics,
};
use super::error::CuptiError;

/// A metric set turned into CUPTI's configuration for this chip (host-side work, done once per set).
struct Prepared {
    host: Host,
    /// The metrics CUPTI knows, in the order they were added.
    known: Vec<String>,
    /// The set it was made for.
    metrics_asked: Vec<String>,
    config: Vec<u8>,
}

/// CUPTI set up in the worker: loaded and initialised once, with each metric set's configuration kept, so
/// a second profile pays only for its launch's replays. The range profiler itself is enabled only around a
/// profiled launch.
pub(crate) struct CounterSession {
    _profiler: ProfilerSession,
    chip: CString,
    availability: Vec<u8>,
    prepared: Vec<Prepared>,
}

/// More replays than any metric set kt asks for needs (a few dozen at most): a loop guard.
const MAX_PASSES: u32 = 500;

// SAFETY: CUPTI's host and profiler objects are not tied to the thread that made them; a session is used by
// one thread at a time (made on a helper thread, then moved to the worker's main thread).
unsafe impl Send for CounterSession {}

/// Where a profile's time went, for the parent's debug log: (phase, milliseconds).
pub(crate) type Phases = Vec<(&'static str, f64)>;

fn lap(phases: &mut Phases, what: &'static str, since: &mut std::time::Instant) {
    phases.push((what, since.elapsed().as_secs_f64() * 1e3));
    *since = std::time::Instant::now();
}

impl CounterSession {
    /// Loads CUPTI from `library` ([`find_cupti`]) and initialises its profiler for the context `ctx` of
    /// device `ordinal`.
    pub fn start(
        library: &Path,
        ctx: CUcontext,
        ordinal: usize,
    ) -> Result<CounterSession, CuptiError> {
        let profiler = ProfilerSession::begin(library)?;
        Ok(CounterSession {
            _profiler: profiler,
            chip: chip_name(ordinal)?,
            availability: counter_availability(ctx)?,
            prepared: Vec::new(),
        })
    }

    /// Starts CUPTI and prepares the counted ones of `metrics` on a helper thread with `ctx` current, so the worker's main
    /// thread goes on launching meanwhile (the host-side set-up takes most of a second).
    pub fn start_in_background(
        library: PathBuf,
        ctx: std::sync::Arc<cudarc::driver::CudaContext>,
        ordinal: usize,
        metrics: Vec<String>,
    ) -> std::thread::JoinHandle<Result<CounterSession, CuptiError>> {
        std::thread::spawn(move || {
            ctx.bind_to_thread()
                .map_err(|e| CuptiError::BindContext(e.to_string()))?;
            let mut session = CounterSession::start(&library, ctx.cu_ctx(), ordinal)?;
            session.prepare(&crate::worker::gpu::launch_facts::counted_metrics(&metrics))?;
            Ok(session)
        })
    }

    fn prepare(&mut self, metrics: &[&str]) -> Result<&Prepared, CuptiError> {
        let index = match self
            .prepared
            .iter()
            .position(|p| p.metrics_asked == metrics)
        {
            Some(i) => i,
            None => {
                let known = known_metrics(&self.chip, &self.availability, metrics)?;
                let host = Host::new(&self.chip, &self.availability)?;
                let mut names = Names::new(&known)?;
                host.add(&mut names)?;
                let config = host.config_image()?;
                self.prepared.push(Prepared {
                    host,
                    known: known.iter().map(|m| m.to_string()).collect(),
                    metrics_asked: metrics.iter().map(|m| m.to_string()).collect(),
                    config,
                });
                self.prepared.len() - 1
            }
        };
        Ok(&self.prepared[index])
    }

    /// Collects `metrics` over as many calls of `pass` as CUPTI needs (each must restore the outputs to the
    /// same starting contents, launch the kernel exactly once and synchronise) in `ctx`. A metric CUPTI does not know comes back as `None`; an error means no counters
    /// could be collected (no permission to read counters, an unsupported GPU).
    pub fn collect<E: std::fmt::Display>(
        &mut self,
        ctx: CUcontext,
        metrics: &[&str],
        mut pass: impl FnMut() -> Result<(), E>,
        phases: &mut Phases,
    ) -> Result<Counters, CuptiError> {
        let mut since = std::time::Instant::now();
        let prepared = self.prepare(metrics)?;
        lap(phases, "configuration", &mut since);
        let mut values: Vec<(String, Option<f64>)> =
            metrics.iter().map(|m| (m.to_string(), None)).collect();
        if prepared.known.is_empty() {
            return Ok(Counters { values, passes: 0 });
        }
        let known: Vec<&str> = prepared.known.iter().map(String::as_str).collect();
        let mut names = Names::new(&known)?;
        let profiler = RangeProfiler::enable(ctx)?;
        let mut counter_data = profiler.counter_data(&mut names)?;
        profiler.set_config(&prepared.config, &mut counter_data)?;
        lap(phases, "enable", &mut since);
        let mut submitted = 0u32;
        // where the replays' time goes: CUPTI's start of a pass, kt's pass, CUPTI's end of it
        let mut split = [0f64; 3];
        loop {
            let t = std::time::Instant::now();
            profiler.start()?;
            split[0] += t.elapsed().as_secs_f64() * 1e3;
            let t = std::time::Instant::now();
            let launched = pass().map_err(|e| CuptiError::Pass(e.to_string()));
            split[1] += t.elapsed().as_secs_f64() * 1e3;
            let t = std::time::Instant::now();
            let all_passes = profiler.stop()?;
            split[2] += t.elapsed().as_secs_f64() * 1e3;
            launched?;
            submitted += 1;
            if all_passes {
                break;
            }
            if submitted > MAX_PASSES {
                return Err(CuptiError::TooManyPasses(MAX_PASSES));
            }
        }
        lap(phases, "replays", &mut since);
        phases.extend([
            ("of which pass starts", split[0]),
            ("of which launches", split[1]),
            ("of which pass ends", split[2]),
        ]);
        profiler.decode()?;
        let measured = prepared.host.evaluate(&counter_data, &mut names)?;
        drop(profiler);
        lap(phases, "evaluate", &mut since);
        for (name, value) in known.iter().zip(measured) {
            if let Some(slot) = values.iter_mut().find(|(n, _)| n == name) {
                slot.1 = value.is_finite().then_some(value);
            }
        }
        Ok(Counters {
            values,
            passes: submitted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::cupti::sys;

    /// How many replay passes each metric of kt's summary set costs, alone and as the set's saving when
    /// left out: what decides a profile's cost (each pass costs ~20 ms of CUPTI's own set-up on an H100).
    #[test]
    #[ignore = "needs a GPU; prints the replay passes of kt's summary metrics"]
    fn passes_of_the_summary_metrics() {
        let ctx = cudarc::driver::CudaContext::new(0).unwrap();
        let session =
            CounterSession::start(&super::super::find_cupti().unwrap(), ctx.cu_ctx(), 0).unwrap();
        let all: Vec<String> = kt_profile::SUMMARY_METRICS
            .iter()
            .map(|m| m.to_string())
            .collect();
        let counted = crate::worker::gpu::launch_facts::counted_metrics(&all);
        let passes_of = |metrics: &[&str]| {
            let host = Host::new(&session.chip, &session.availability).unwrap();
            host.add(&mut Names::new(metrics).unwrap()).unwrap();
            let mut image = host.config_image().unwrap();
            // SAFETY: as in the module.
            let mut p: sys::CUpti_Profiler_Host_GetNumOfPasses_Params =
                unsafe { std::mem::zeroed() };
            p.structSize = sys::Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE as usize;
            p.configImageSize = image.len();
            p.pConfigImage = image.as_mut_ptr();
            // SAFETY: the image outlives the call.
            assert_eq!(
                unsafe { sys::cuptiProfilerHostGetNumOfPasses(&mut p) },
                sys::CUptiResult::CUPTI_SUCCESS
            );
            p.numOfPasses
        };
        println!(
            "all {} counted metrics: {} passes",
            counted.len(),
            passes_of(&counted)
        );
        for m in &counted {
            let without: Vec<&str> = counted.iter().copied().filter(|x| x != m).collect();
            println!(
                "{m}: alone {}, the set without it {}",
                passes_of(&[m]),
                passes_of(&without)
            );
        }
    }
}
