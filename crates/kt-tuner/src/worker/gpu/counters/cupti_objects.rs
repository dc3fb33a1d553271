//! CUPTI's profiler objects as Rust values: every call checked (its error named by CUPTI), every object
//! released when dropped, so a failed profile leaves nothing enabled that would slow later launches.

use std::ffi::{CStr, CString, c_char};
use std::path::Path;

use cudarc::cupti::sys;
use cudarc::driver::sys::CUcontext;

use super::error::CuptiError;
use super::library::load_cupti;

pub(super) fn check(what: &str, r: sys::CUptiResult) -> Result<(), CuptiError> {
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
    Err(CuptiError::Call {
        call: what.to_string(),
        result: name,
    })
}

/// Metric names as C strings, and the pointer array CUPTI reads them through.
pub(super) struct Names {
    _owned: Vec<CString>,
    pub(super) ptrs: Vec<*const c_char>,
}

impl Names {
    pub(super) fn new(metrics: &[&str]) -> Result<Names, CuptiError> {
        let owned = metrics
            .iter()
            .map(|m| CString::new(*m).map_err(|_| CuptiError::MetricName(m.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
        Ok(Names {
            _owned: owned,
            ptrs,
        })
    }
}

/// The host side: the chip's metric definitions, turned into a configuration and evaluated from counters.
pub(super) struct Host {
    object: *mut sys::CUpti_Profiler_Host_Object,
}

impl Host {
    pub(super) fn new(chip: &CStr, availability: &[u8]) -> Result<Host, CuptiError> {
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

    pub(super) fn add(&self, names: &mut Names) -> Result<(), CuptiError> {
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

    pub(super) fn config_image(&self) -> Result<Vec<u8>, CuptiError> {
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

    pub(super) fn evaluate(
        &self,
        counter_data: &[u8],
        names: &mut Names,
    ) -> Result<Vec<f64>, CuptiError> {
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
pub(super) struct RangeProfiler {
    object: *mut sys::CUpti_RangeProfiler_Object,
}

impl RangeProfiler {
    pub(super) fn enable(ctx: CUcontext) -> Result<RangeProfiler, CuptiError> {
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

    pub(super) fn counter_data(&self, names: &mut Names) -> Result<Vec<u8>, CuptiError> {
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

    pub(super) fn set_config(
        &self,
        config: &[u8],
        counter_data: &mut [u8],
    ) -> Result<(), CuptiError> {
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

    pub(super) fn start(&self) -> Result<(), CuptiError> {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_Start_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_Start_Params_STRUCT_SIZE as usize;
        p.pRangeProfilerObject = self.object;
        // SAFETY: valid object.
        check("starting", unsafe { sys::cuptiRangeProfilerStart(&mut p) })
    }

    /// Stops collecting; whether every pass was submitted.
    pub(super) fn stop(&self) -> Result<bool, CuptiError> {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_Stop_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_Stop_Params_STRUCT_SIZE as usize;
        p.pRangeProfilerObject = self.object;
        // SAFETY: valid object.
        check("stopping", unsafe { sys::cuptiRangeProfilerStop(&mut p) })?;
        Ok(p.isAllPassSubmitted != 0)
    }

    pub(super) fn decode(&self) -> Result<(), CuptiError> {
        // SAFETY: as above.
        let mut p: sys::CUpti_RangeProfiler_DecodeData_Params = unsafe { std::mem::zeroed() };
        p.structSize = sys::RangeProfiler_DecodeData_Params_STRUCT_SIZE as usize;
        p.pRangeProfilerObject = self.object;
        // SAFETY: valid object.
        check("decoding", unsafe {
            sys::cuptiRangeProfilerDecodeData(&mut p)
        })?;
        if p.numOfRangeDropped > 0 {
            return Err(CuptiError::RangesDropped(p.numOfRangeDropped));
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
pub(super) struct ProfilerSession;

impl ProfilerSession {
    pub(super) fn begin(library: &Path) -> Result<ProfilerSession, CuptiError> {
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

pub(super) fn chip_name(ordinal: usize) -> Result<CString, CuptiError> {
    // SAFETY: as above.
    let mut p: sys::CUpti_Device_GetChipName_Params = unsafe { std::mem::zeroed() };
    p.structSize = sys::Device_GetChipName_Params_STRUCT_SIZE as usize;
    p.deviceIndex = ordinal;
    // SAFETY: CUPTI points pChipName at a string it owns.
    check("chip name", unsafe { sys::cuptiDeviceGetChipName(&mut p) })?;
    if p.pChipName.is_null() {
        return Err(CuptiError::NoChipName);
    }
    // SAFETY: non-null, NUL-terminated, owned by CUPTI.
    Ok(unsafe { CStr::from_ptr(p.pChipName) }.to_owned())
}

pub(super) fn counter_availability(ctx: CUcontext) -> Result<Vec<u8>, CuptiError> {
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
pub(super) fn known_metrics<'a>(
    chip: &CStr,
    availability: &[u8],
    metrics: &[&'a str],
) -> Result<Vec<&'a str>, CuptiError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_name_with_a_nul_is_refused_not_truncated() {
        assert!(Names::new(&["a\0b"]).is_err());
        assert_eq!(Names::new(&["dram__bytes_read.sum"]).unwrap().ptrs.len(), 1);
    }
}
