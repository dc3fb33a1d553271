//! Which profiler takes kt's profiles. CUPTI, inside the tuner's worker, reads the same Perfworks counters
//! Nsight Compute does, by the same names, without a process to start: a profile costs its replays (a few
//! hundred milliseconds for the demo's naive matmul) instead of ncu's second or more of start-up. Nsight
//! Compute is used where CUPTI is not found, where `KT_PROFILER=ncu` asks for it, or after CUPTI failed
//! once in this process (a GPU its range profiler does not support). Only ncu needs a standby
//! (`profile_standby.rs`).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// `auto` (the default: CUPTI where found, else ncu), `cupti` or `ncu`.
pub const PROFILER_ENV: &str = "KT_PROFILER";

/// The profiler a profile is taken with.
#[derive(Debug, Clone, PartialEq)]
pub enum Profiler {
    /// CUPTI's range profiler in the tuner's worker, loaded from this library.
    Cupti(PathBuf),
    /// Nsight Compute on `kt __profile-launch`.
    Ncu(kt_profile::NcuPath),
}

impl Profiler {
    /// What a cached profile was taken with: part of its key, since the two tools may differ a little.
    pub fn identity(&self) -> String {
        match self {
            Profiler::Cupti(lib) => format!(
                "cupti:{}",
                crate::stage3::profiling::profile_cache::ncu_identity(lib)
            ),
            Profiler::Ncu(ncu) => crate::stage3::profiling::profile_cache::ncu_identity(ncu.path()),
        }
    }

    /// The tool's name as a user knows it.
    pub fn name(&self) -> &'static str {
        match self {
            Profiler::Cupti(_) => "CUPTI",
            Profiler::Ncu(_) => "Nsight Compute",
        }
    }
}

static CUPTI_FAILED: AtomicBool = AtomicBool::new(false);

/// Records that CUPTI could not read counters here: later profiles of this process use ncu.
pub fn cupti_failed(why: &str) {
    if !CUPTI_FAILED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            reason = why,
            "CUPTI cannot read this GPU's counters; profiling with Nsight Compute instead"
        );
    }
}

/// What `KT_PROFILER` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wanted {
    Auto,
    Cupti,
    Ncu,
}

fn wanted(value: Option<&str>) -> Wanted {
    match value.map(str::to_ascii_lowercase).as_deref() {
        Some("cupti") => Wanted::Cupti,
        Some("ncu") | Some("nsight") | Some("nsight-compute") => Wanted::Ncu,
        _ => Wanted::Auto,
    }
}

/// CUPTI's library when it is to be used, looked up once per process.
fn cupti() -> Option<&'static PathBuf> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let value = std::env::var(PROFILER_ENV).ok();
            if let Some(v) = &value
                && wanted(Some(v)) == Wanted::Auto
                && !v.eq_ignore_ascii_case("auto")
            {
                tracing::warn!("{PROFILER_ENV}={v} is not one of auto, cupti, ncu: using auto");
            }
            if wanted(value.as_deref()) == Wanted::Ncu {
                return None;
            }
            match kt_tuner::worker::find_cupti() {
                Ok(path) => Some(path),
                Err(why) => {
                    tracing::debug!(reason = %why, "no CUPTI: profiles use Nsight Compute");
                    None
                }
            }
        })
        .as_ref()
}

/// CUPTI's library where profiles are to be taken with it (found, and `KT_PROFILER` is not `ncu`).
pub fn cupti_library() -> Option<PathBuf> {
    cupti().cloned()
}

/// The profiler for the next profile, or why there is none.
pub fn profiler() -> Result<Profiler, String> {
    let only_cupti = wanted(std::env::var(PROFILER_ENV).ok().as_deref()) == Wanted::Cupti;
    if !CUPTI_FAILED.load(Ordering::Relaxed)
        && let Some(lib) = cupti()
    {
        return Ok(Profiler::Cupti(lib.clone()));
    }
    if only_cupti {
        return Err(format!(
            "{PROFILER_ENV}=cupti, but CUPTI was not found or cannot read this GPU's counters"
        ));
    }
    match kt_profile::ncu_once() {
        Some(ncu) => Ok(Profiler::Ncu(ncu.clone())),
        None => Err(kt_profile::ncu_availability().err().map_or_else(
            || "neither CUPTI nor Nsight Compute (ncu) was found".into(),
            |m| format!("CUPTI was not found, and {m}"),
        )),
    }
}

/// Whether the next profile will need Nsight Compute (and so a standby is worth starting).
pub fn profiles_with_ncu() -> bool {
    matches!(profiler(), Ok(Profiler::Ncu(_)))
}

/// CUPTI's library when the next profile will use it.
pub fn profiles_with_cupti() -> Option<PathBuf> {
    match profiler() {
        Ok(Profiler::Cupti(lib)) => Some(lib),
        _ => None,
    }
}

/// Where profiles will be taken with CUPTI, has `tuner`'s worker start it now, in the background (its
/// start takes most of a second, which the first profile would otherwise wait for). A failure here only
/// means the first profile starts CUPTI itself.
pub fn prepare_counters(tuner: &mut kt_tuner::session::Tuner) {
    if let Some(lib) = profiles_with_cupti()
        && let Err(e) = tuner.prepare_counters(kt_profile::SUMMARY_METRICS, &lib)
    {
        tracing::debug!(error = %e, "CUPTI was not started early");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_auto_unless_it_names_a_tool() {
        assert_eq!(wanted(None), Wanted::Auto);
        assert_eq!(wanted(Some("auto")), Wanted::Auto);
        assert_eq!(wanted(Some("CUPTI")), Wanted::Cupti);
        assert_eq!(wanted(Some("ncu")), Wanted::Ncu);
        assert_eq!(wanted(Some("nsight-compute")), Wanted::Ncu);
        assert_eq!(wanted(Some("bogus")), Wanted::Auto);
    }

    #[test]
    fn profiles_of_the_two_tools_are_cached_apart() {
        let cupti = Profiler::Cupti("/usr/local/cuda/lib64/libcupti.so.13".into());
        let ncu = Profiler::Ncu(kt_profile::NcuPath("/usr/local/cuda/bin/ncu".into()));
        assert!(cupti.identity().starts_with("cupti:"));
        assert_ne!(cupti.identity(), ncu.identity());
        assert_eq!(cupti.name(), "CUPTI");
    }
}
