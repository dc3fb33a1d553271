//! Hardware counters of one launch, collected inside the worker through CUPTI's range profiler: the same
//! Perfworks metrics Nsight Compute reports, by the same names, without starting ncu. ncu costs a second or
//! more per profile before it measures anything (its own start, injecting itself into a new process, a new
//! CUDA context); here the context, module and test data are already on the device, so a profile costs the
//! launch's replay passes (about 20 ms of CUPTI's own per pass on an H100) and a few milliseconds more.
//!
//! kt replays the launch itself (CUPTI's user replay), once per pass, each from the outputs' initial contents
//! and an L2 flushed of the kernel's data (`counted_run.rs`), so every pass sees what ncu's kernel replay with
//! its default cache control would show. In reading order: `library.rs` finds and loads libcupti,
//! `cupti_objects.rs` wraps CUPTI's objects (each checked call, each object released when dropped),
//! `session.rs` keeps CUPTI started in the worker and collects a metric set over one launch; `error.rs` names what can go wrong.

mod cupti_objects;
mod error;
mod library;
mod session;

pub use error::CuptiError;
pub use library::find_cupti;
pub(crate) use session::CounterSession;

/// Metric values in the order asked for; `None` for a metric this device or CUPTI does not know.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Counters {
    pub values: Vec<(String, Option<f64>)>,
    /// How many times the launch was replayed to collect them.
    pub passes: u32,
}
