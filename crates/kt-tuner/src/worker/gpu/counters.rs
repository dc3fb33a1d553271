//! Hardware counters of one launch, collected inside the worker through CUPTI's range profiler: the same
//! Perfworks metrics Nsight Compute reports, by the same names, without starting ncu. ncu costs a second or
//! more per profile before it measures anything (its own start, injecting itself into a new process, a new
//! CUDA context); here the context, module and test data are already on the device, so a profile costs the
//! kernel's replay passes and a few milliseconds of set-up.
//!
//! The launch is replayed by CUPTI (kernel replay: device memory saved before the first pass and restored
//! before each further one), so the outputs end as one launch leaves them. Caches are not flushed between
//! passes (ncu's default does flush them): hit rates can read a little higher than ncu's for a kernel whose
//! working set fits in L2.

use std::ffi::{CStr, CString, c_char};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cudarc::cupti::sys;
use cudarc::driver::sys::CUcontext;

/// Metric values in the order asked for; `None` for a metric this device or CUPTI does not know.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Counters {
    pub values: Vec<(String, Option<f64>)>,
    /// How many times the launch was replayed to collect them.
    pub passes: u32,
}

/// Where CUPTI's library is, found from the parent's environment (the worker's is filtered): the CUDA
/// installations named by CUDA_HOME, CUDA_PATH or CUDA_ROOT, the loader's LD_LIBRARY_PATH, /usr/local/cuda
/// and the distribution's library directory. The message says where it looked.
pub fn find_cupti() -> Result<PathBuf, String> {
    let dirs = cupti_dirs();
    for dir in &dirs {
        for name in CUPTI_NAMES {
            let path = dir.join(name);
            if path.is_file() {
                return Ok(path);
            }
        }
    }
    Err(format!(
        "CUPTI (libcupti.so) was not found in {} directories (CUDA_HOME, CUDA_PATH, LD_LIBRARY_PATH, \
         /usr/local/cuda); set CUDA_HOME to the CUDA toolkit that has extras/CUPTI",
        dirs.len()
    ))
}

const CUPTI_NAMES: [&str; 3] = ["libcupti.so.13", "libcupti.so.12", "libcupti.so"];

/// The directories CUPTI ships in, for the CUDA installations kt knows of.
fn cupti_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .collect();
    roots.push("/usr/local/cuda".into());
    let mut dirs = Vec::new();
    for root in roots {
        for sub in [
            "extras/CUPTI/lib64",
            "lib64",
            "targets/x86_64-linux/lib",
            "lib",
        ] {
            dirs.push(root.join(sub));
        }
    }
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&paths));
    }
    dirs.push("/usr/lib/x86_64-linux-gnu".into());
    dirs
}

/// Loads CUPTI from `path` once for the whole process (cudarc then finds it by its soname), with the
/// Perfworks libraries beside it, so that no CUPTI call can fail for want of a library; kept until exit.
fn load_cupti(path: &Path) -> Result<(), String> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            if let Some(dir) = path.parent() {
                for helper in ["libnvperf_host.so", "libnvperf_target.so"] {
                    let h = dir.join(helper);
                    // SAFETY: NVIDIA's Perfworks libraries; loading runs only their initialisers.
                    if h.is_file()
                        && let Ok(lib) = unsafe { libloading::Library::new(&h) }
                    {
                        std::mem::forget(lib);
                    }
                }
            }
            // SAFETY: as above; CUPTI's initialisers only register themselves.
            let lib = unsafe { libloading::Library::new(path) }
                .map_err(|e| format!("CUPTI could not be loaded from {}: {e}", path.display()))?;
            std::mem::forget(lib);
            Ok(())
        })
        .clone()
}

fn check(what: &str, r: sys::CUptiResult) -> Result<(), String> {
    if r == sys::CUptiResult::CUPTI_SUCCESS {
        return Ok(());
    }
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: CUPTI returns a static string for any result code.
    let name = unsafe {
        if sys::cuptiGetResultString(r, &mut text) == sys::CUptiResult::CUPTI_SUCCESS
            && !text.is_null()
        {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        } else {
            format!("{r:?}")
        }
    };
    Err(format!("CUPTI {what}: {name}"))
}

/// Metric names as C strings, and the pointer array CUPTI reads them through.
struct Names {
    _owned: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

impl Names {
    fn new(metrics: &[&str]) -> Result<Names, String> {
        let owned = metrics
            .iter()
            .map(|m| CString::new(*m).map_err(|_| format!("metric name {m:?} contains a NUL")))
            .collect::<Result<Vec<_>, _>>()?;
        let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
        Ok(Names {
            _owned: owned,
            ptrs,
        })
    }
}

/// The host side: the chip's metric definitions, turned into a configuration and evaluated from counters.
struct Host {
    object: *mut sys::CUpti_Profiler_Host_Object,
}

impl Host {
    fn new(chip: &CStr, availability: &[u8]) -> Result<Host, String> {
        // SAFETY: plain-data parameter struct; zero is every field's "unset".
        let mut p: sys::CUpti_Profiler_Host_Initialize_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::Profiler_Host_Initialize_Params_STRUCT_SIZE as usize;
        p.profilerType = sys::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        p.pChipName = chip.as_ptr();
        p.pCounterAvailabilityImage = availability.as_ptr();
        // SAFETY: the strings and image outlive the call.
        check("host initialise", unsafe {
            sys::cuptiProfilerHostInitialize(&mut p)
        })?;
        Ok(Host {
            object: p.pHostObject,
        })
    }

    fn add(&self, names: &mut Names) -> Result<(), String> {
        // SAFETY: as above.
        let mut p: sys::CUpti_Profiler_Host_ConfigAddMetrics_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE as usize;
        p.pHostObject = self.object;
        p.ppMetricNames = names.ptrs.as_mut_ptr();
        p.numMetrics = names.ptrs.len();
        // SAFETY: the names outlive the call.
        check("adding metrics", unsafe {
            sys::cuptiProfilerHostConfigAddMetrics(&mut p)
        })
    }

    fn config_image(&self) -> Result<Vec<u8>, String> {
        // SAFETY: as above.
        let mut size: sys::CUpti_Profiler_Host_GetConfigImageSize_Params =
            unsafe { std::mem::zeroed() };
        size.structSize = sys::Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE as usize;
        size.pHostObject = self.object;
        // SAFETY: valid host object.
        check("config image size", unsafe {
            sys::cuptiProfilerHostGetConfigImageSize(&mut size)
        })?;
        let mut image = vec![0u8; size.configImageSize];
        // SAFETY: as above.
        let mut p: sys::CUpti_Profiler_Host_GetConfigImage_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::Profiler_Host_GetConfigImage_Params_STRUCT_SIZE as usize;
        p.pHostObject = self.object;
        p.configImageSize = image.len();
        p.pConfigImage = image.as_mut_ptr();
        // SAFETY: the buffer has the size CUPTI asked for.
        check("config image", unsafe {
            sys::cuptiProfilerHostGetConfigImage(&mut p)
        })?;
        Ok(image)
    }

    fn evaluate(&self, counter_data: &[u8], names: &mut Names) -> Result<Vec<f64>, String> {
        let mut values = vec![0f64; names.ptrs.len()];
        // SAFETY: as above.
        let mut p: sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params =
            unsafe { std::mem::zeroed() };
        p.structSize = sys::Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE as usize;
        p.pHostObject = self.object;
        p.pCounterDataImage = counter_data.as_ptr();
        p.counterDataImageSize = counter_data.len();
        p.rangeIndex = 0;
        p.ppMetricNames = names.ptrs.as_mut_ptr();
        p.numMetrics = names.ptrs.len();
        p.pMetricValues = values.as_mut_ptr();
        // SAFETY: one value slot per name.
        check("evaluating metrics", unsafe {
            sys::cuptiProfilerHostEvaluateToGpuValues(&mut p)
        })?;
        Ok(values)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // SAFETY: as above.
        let mut p: sys::CUpti_Profiler_Host_Deinitialize_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::Profiler_Host_Deinitialize_Params_STRUCT_SIZE as usize;
        p.pHostObject = self.object;
        // SAFETY: the object came from cuptiProfilerHostInitialize and is released once.
        let _ = unsafe { sys::cuptiProfilerHostDeinitialize(&mut p) };
    }
}

/// The range profiler enabled on a context; disabled (and CUPTI's profiler deinitialised) when dropped, so
/// the launches timed afterwards run as before.
struct RangeProfiler {
    object: *mut sys::CUpti_RangeProfiler_Object,
}

impl RangeProfiler {
    fn enable(ctx: CUcontext) -> Result<RangeProfiler, String> {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_Enable_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_Enable_Params_STRUCT_SIZE as usize;
        p.ctx = ctx as _;
        // SAFETY: ctx is the worker's live context.
        check("enabling the range profiler", unsafe {
            sys::cuptiRangeProfilerEnable(&mut p)
        })?;
        Ok(RangeProfiler {
            object: p.pRangeProfilerObject,
        })
    }

    fn counter_data(&self, names: &mut Names) -> Result<Vec<u8>, String> {
        // SAFETY: as above.
        let mut size: sys::CUpti_RangeProfiler_GetCounterDataSize_Params =
            unsafe { std::mem::zeroed() };
        size.structSize = sys::RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE as usize;
        size.pRangeProfilerObject = self.object;
        size.pMetricNames = names.ptrs.as_mut_ptr();
        size.numMetrics = names.ptrs.len();
        size.maxNumOfRanges = 1;
        size.maxNumRangeTreeNodes = 1;
        // SAFETY: the names outlive the call.
        check("counter data size", unsafe {
            sys::cuptiRangeProfilerGetCounterDataSize(&mut size)
        })?;
        let mut data = vec![0u8; size.counterDataSize];
        // SAFETY: as above.
        let mut init: sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params =
            unsafe { std::mem::zeroed() };
        init.structSize =
            sys::RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE as usize;
        init.pRangeProfilerObject = self.object;
        init.counterDataSize = data.len();
        init.pCounterData = data.as_mut_ptr();
        // SAFETY: the buffer has the size CUPTI asked for.
        check("counter data", unsafe {
            sys::cuptiRangeProfilerCounterDataImageInitialize(&mut init)
        })?;
        Ok(data)
    }

    fn set_config(&self, config: &[u8], counter_data: &mut [u8]) -> Result<(), String> {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_SetConfig_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_SetConfig_Params_STRUCT_SIZE as usize;
        p.pRangeProfilerObject = self.object;
        p.configSize = config.len();
        p.pConfig = config.as_ptr();
        p.counterDataImageSize = counter_data.len();
        p.pCounterDataImage = counter_data.as_mut_ptr();
        p.range = sys::CUpti_ProfilerRange::CUPTI_AutoRange;
        // kt replays the launch itself (`collect`), resetting only the outputs before each pass: CUPTI's
        // kernel replay would save and restore every allocation of the worker (pristine copies included)
        p.replayMode = sys::CUpti_ProfilerReplayMode::CUPTI_UserReplay;
        p.maxRangesPerPass = 1;
        p.numNestingLevels = 1;
        p.minNestingLevel = 1;
        p.passIndex = 0;
        p.targetNestingLevel = 1;
        // SAFETY: both images outlive the profiling (they are only read back after `decode`).
        check("setting the configuration", unsafe {
            sys::cuptiRangeProfilerSetConfig(&mut p)
        })
    }

    fn start(&self) -> Result<(), String> {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_Start_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_Start_Params_STRUCT_SIZE as usize;
        p.pRangeProfilerObject = self.object;
        // SAFETY: valid object.
        check("starting", unsafe { sys::cuptiRangeProfilerStart(&mut p) })
    }

    /// Stops collecting; whether every pass was submitted.
    fn stop(&self) -> Result<bool, String> {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_Stop_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_Stop_Params_STRUCT_SIZE as usize;
        p.pRangeProfilerObject = self.object;
        // SAFETY: valid object.
        check("stopping", unsafe { sys::cuptiRangeProfilerStop(&mut p) })?;
        Ok(p.isAllPassSubmitted != 0)
    }

    fn decode(&self) -> Result<(), String> {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_DecodeData_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_DecodeData_Params_STRUCT_SIZE as usize;
        p.pRangeProfilerObject = self.object;
        // SAFETY: valid object.
        check("decoding", unsafe {
            sys::cuptiRangeProfilerDecodeData(&mut p)
        })?;
        if p.numOfRangeDropped > 0 {
            return Err(format!(
                "CUPTI dropped {} range(s): the counter data was too small",
                p.numOfRangeDropped
            ));
        }
        Ok(())
    }
}

impl Drop for RangeProfiler {
    fn drop(&mut self) {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_Disable_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_Disable_Params_STRUCT_SIZE as usize;
        p.pRangeProfilerObject = self.object;
        // SAFETY: the object came from cuptiRangeProfilerEnable and is disabled once.
        let _ = unsafe { sys::cuptiRangeProfilerDisable(&mut p) };
    }
}

/// CUPTI's profiler, initialised for the lifetime of one profile.
struct ProfilerSession;

impl ProfilerSession {
    fn begin(library: &Path) -> Result<ProfilerSession, String> {
        load_cupti(library)?;
        // SAFETY: as above.
        let mut p: sys::CUpti_Profiler_Initialize_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::Profiler_Initialize_Params_STRUCT_SIZE as usize;
        // SAFETY: no pointers.
        check("initialising the profiler", unsafe {
            sys::cuptiProfilerInitialize(&mut p)
        })?;
        Ok(ProfilerSession)
    }
}

impl Drop for ProfilerSession {
    fn drop(&mut self) {
        // SAFETY: as above.
        let mut p: sys::CUpti_Profiler_DeInitialize_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::Profiler_DeInitialize_Params_STRUCT_SIZE as usize;
        // SAFETY: paired with the initialise in `begin`.
        let _ = unsafe { sys::cuptiProfilerDeInitialize(&mut p) };
    }
}

fn chip_name(ordinal: usize) -> Result<CString, String> {
    // SAFETY: as above.
    let mut p: sys::CUpti_Device_GetChipName_Params = unsafe { std::mem::zeroed() };
    p.structSize = sys::Device_GetChipName_Params_STRUCT_SIZE as usize;
    p.deviceIndex = ordinal;
    // SAFETY: CUPTI points pChipName at a string it owns.
    check("chip name", unsafe { sys::cuptiDeviceGetChipName(&mut p) })?;
    if p.pChipName.is_null() {
        return Err("CUPTI gave no chip name".into());
    }
    // SAFETY: non-null, NUL-terminated, owned by CUPTI.
    Ok(unsafe { CStr::from_ptr(p.pChipName) }.to_owned())
}

fn counter_availability(ctx: CUcontext) -> Result<Vec<u8>, String> {
    // SAFETY: as above.
    let mut p: sys::CUpti_Profiler_GetCounterAvailability_Params = unsafe { std::mem::zeroed() };
    p.structSize = sys::Profiler_GetCounterAvailability_Params_STRUCT_SIZE as usize;
    p.ctx = ctx as _;
    // SAFETY: a null image asks for its size.
    check("counter availability size", unsafe {
        sys::cuptiProfilerGetCounterAvailability(&mut p)
    })?;
    let mut image = vec![0u8; p.counterAvailabilityImageSize];
    p.pCounterAvailabilityImage = image.as_mut_ptr();
    // SAFETY: the buffer has the size CUPTI asked for.
    check("counter availability", unsafe {
        sys::cuptiProfilerGetCounterAvailability(&mut p)
    })?;
    Ok(image)
}

/// The metrics among `metrics` this chip's CUPTI knows: all of them when they can be added together, else
/// those that can be added one by one (a name ncu derives itself, or one another architecture lacks).
fn known_metrics<'a>(
    chip: &CStr,
    availability: &[u8],
    metrics: &[&'a str],
) -> Result<Vec<&'a str>, String> {
    let host = Host::new(chip, availability)?;
    if host.add(&mut Names::new(metrics)?).is_ok() {
        return Ok(metrics.to_vec());
    }
    drop(host);
    let mut known = Vec::new();
    for m in metrics {
        let probe = Host::new(chip, availability)?;
        if probe.add(&mut Names::new(&[m])?).is_ok() {
            known.push(*m);
        } else {
            tracing::debug!(metric = m, "CUPTI does not know this metric here");
        }
    }
    Ok(known)
}

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
pub(super) struct CounterSession {
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
pub(super) type Phases = Vec<(&'static str, f64)>;

fn lap(phases: &mut Phases, what: &'static str, since: &mut std::time::Instant) {
    phases.push((what, since.elapsed().as_secs_f64() * 1e3));
    *since = std::time::Instant::now();
}

impl CounterSession {
    /// Loads CUPTI from `library` ([`find_cupti`]) and initialises its profiler for the context `ctx` of
    /// device `ordinal`.
    pub fn start(library: &Path, ctx: CUcontext, ordinal: usize) -> Result<CounterSession, String> {
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
    ) -> std::thread::JoinHandle<Result<CounterSession, String>> {
        std::thread::spawn(move || {
            ctx.bind_to_thread()
                .map_err(|e| format!("binding the context: {e}"))?;
            let mut session = CounterSession::start(&library, ctx.cu_ctx(), ordinal)?;
            session.prepare(&super::launch_facts::counted_metrics(&metrics))?;
            Ok(session)
        })
    }

    fn prepare(&mut self, metrics: &[&str]) -> Result<&Prepared, String> {
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
    ) -> Result<Counters, String> {
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
            let launched = pass().map_err(|e| e.to_string());
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
                return Err(format!(
                    "CUPTI asked for more than {MAX_PASSES} replays of one launch"
                ));
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

    /// How many replay passes each metric of kt's summary set costs, alone and as the set's saving when
    /// left out: what decides a profile's cost (each pass costs ~20 ms of CUPTI's own set-up on an H100).
    #[test]
    #[ignore = "needs a GPU; prints the replay passes of kt's summary metrics"]
    fn passes_of_the_summary_metrics() {
        let ctx = cudarc::driver::CudaContext::new(0).unwrap();
        let session = CounterSession::start(&find_cupti().unwrap(), ctx.cu_ctx(), 0).unwrap();
        let all: Vec<String> = kt_profile::SUMMARY_METRICS
            .iter()
            .map(|m| m.to_string())
            .collect();
        let counted = super::super::launch_facts::counted_metrics(&all);
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

    #[test]
    fn the_cupti_search_looks_in_the_cuda_toolkit_layouts() {
        let dirs = cupti_dirs();
        assert!(dirs.contains(&PathBuf::from("/usr/local/cuda/extras/CUPTI/lib64")));
        assert!(dirs.contains(&PathBuf::from("/usr/local/cuda/targets/x86_64-linux/lib")));
    }

    #[test]
    fn a_metric_name_with_a_nul_is_refused_not_truncated() {
        assert!(Names::new(&["a\0b"]).is_err());
        assert_eq!(Names::new(&["dram__bytes_read.sum"]).unwrap().ptrs.len(), 1);
    }
}
