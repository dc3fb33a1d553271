//! What goes wrong when counters are read through CUPTI. The worker sends it to the parent as its reply's
//! text, so each message names the call and CUPTI's own name for the failure, or where kt looked.

use std::path::PathBuf;

#[derive(Debug, Clone, thiserror::Error)]
pub enum CuptiError {
    /// libcupti is in none of the directories kt knows of.
    #[error(
        "CUPTI (libcupti.so) was not found in {searched} directories (CUDA_HOME, CUDA_PATH, LD_LIBRARY_PATH, \
         /usr/local/cuda); set CUDA_HOME to the CUDA toolkit that has extras/CUPTI"
    )]
    NotFound { searched: usize },
    /// The library was found but did not load.
    #[error("CUPTI could not be loaded from {}: {detail}", path.display())]
    Load { path: PathBuf, detail: String },
    /// A CUPTI call failed; `result` is CUPTI's name for its result code.
    #[error("CUPTI {call}: {result}")]
    Call { call: String, result: String },
    #[error("metric name {0:?} contains a NUL")]
    MetricName(String),
    #[error("CUPTI gave no chip name")]
    NoChipName,
    #[error("CUPTI dropped {0} range(s): the counter data was too small")]
    RangesDropped(usize),
    #[error("CUPTI asked for more than {0} replays of one launch")]
    TooManyPasses(u32),
    /// The helper thread that starts CUPTI could not make the worker's context current.
    #[error("binding the context: {0}")]
    BindContext(String),
    /// One replay of the launch failed (the launch's own error).
    #[error("{0}")]
    Pass(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_says_where_kt_looked_and_what_to_set() {
        let text = CuptiError::NotFound { searched: 7 }.to_string();
        assert!(text.contains("7 directories"), "{text}");
        assert!(text.contains("LD_LIBRARY_PATH, /usr/local/cuda)"), "{text}");
        assert!(text.contains("set CUDA_HOME"), "{text}");
    }
}
