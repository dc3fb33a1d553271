//! Where a run stands (`run.json`'s and `result.json`'s `status`), and what each status means for whoever reads
//! it: the one place that knows which statuses are final, resumable or still running.

use serde::{Deserialize, Serialize};

/// Where a run ends up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Finished,
    Failed,
    Interrupted,
    /// The LLM service failed past its retries (rate limit, timeout, connection, 5xx): an infrastructure
    /// failure, not a result; `kt resume` continues from the last checkpoint once the service is back.
    #[serde(rename = "llm_unavailable")]
    LlmUnavailable,
    /// A status this kt does not know (a newer kt wrote it) or none at all (a partial record): read, never
    /// written, and treated as resumable.
    #[default]
    #[serde(other)]
    Unknown,
}

impl RunStatus {
    /// The status as the records spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::LlmUnavailable => "llm_unavailable",
            RunStatus::Unknown => "unknown",
        }
    }

    /// The run reached its end and delivered its result.
    pub fn is_finished(self) -> bool {
        self == RunStatus::Finished
    }

    /// The run is still going (or was killed without a chance to say otherwise).
    pub fn is_running(self) -> bool {
        self == RunStatus::Running
    }

    /// `finished` and `failed` are final: nothing is left to resume. Every other status (stopped, an LLM
    /// outage, unknown) can be continued with `kt resume`.
    pub fn is_final(self) -> bool {
        matches!(self, RunStatus::Finished | RunStatus::Failed)
    }

    /// Stopped with the work so far kept: Ctrl-C, a breakpoint, a waiting prompt, a missing GPU.
    pub fn is_interrupted(self) -> bool {
        self == RunStatus::Interrupted
    }

    /// The LLM service was down: an infrastructure failure, not a result of the run.
    pub fn is_llm_unavailable(self) -> bool {
        self == RunStatus::LlmUnavailable
    }

    /// Stopped where a CUDA GPU is needed: an interrupted run whose result says `needs_gpu` (the flag is the
    /// result's; this joins the two so that no reader checks one without the other).
    pub fn needs_gpu(self, result_needs_gpu: bool) -> bool {
        self.is_interrupted() && result_needs_gpu
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_and_write_as_the_records_spell_them() {
        for s in [
            RunStatus::Running,
            RunStatus::Finished,
            RunStatus::Failed,
            RunStatus::Interrupted,
            RunStatus::LlmUnavailable,
        ] {
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, s.as_str());
            assert_eq!(serde_json::from_value::<RunStatus>(json).unwrap(), s);
        }
    }

    #[test]
    fn an_unknown_status_reads_as_unknown_and_is_resumable() {
        let s: RunStatus = serde_json::from_str("\"paused_by_a_newer_kt\"").unwrap();
        assert_eq!(s, RunStatus::Unknown);
        assert!(!s.is_final() && !s.is_finished());
    }

    #[test]
    fn only_finished_and_failed_are_final_and_a_gpu_is_needed_only_by_an_interrupted_run() {
        assert!(RunStatus::Finished.is_final() && RunStatus::Failed.is_final());
        assert!(!RunStatus::Interrupted.is_final() && !RunStatus::LlmUnavailable.is_final());
        assert!(RunStatus::Interrupted.needs_gpu(true));
        assert!(!RunStatus::Interrupted.needs_gpu(false));
        assert!(!RunStatus::Failed.needs_gpu(true));
    }
}
