//! One profiled kernel as the Stage 3 state keeps it: the naive kernel or an accepted step's, with its Nsight
//! Compute profile, the summary prompts get, or why there is none.

use std::collections::BTreeMap;

use kt_profile::KernelProfile;
use serde::{Deserialize, Serialize};

use crate::stage3::tunable_code::ORIGINAL_STEP;

/// One profiled kernel: the naive one (`step` = "original") or an accepted step's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRecord {
    /// The step that made the kernel ("original" for the naive kernel).
    pub step: String,
    /// The configuration profiled (the kernel's best).
    pub params: BTreeMap<String, i64>,
    pub profile: Option<KernelProfile>,
    /// The profile in a CUDA programmer's words (at most ten lines): what prompts get.
    pub summary: Option<String>,
    /// Why there is no profile.
    pub skipped: Option<String>,
    /// Wall time the profiling took, seconds.
    pub seconds: f64,
    /// The profile was read from the profile cache, not measured in this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_cache: bool,
}

impl ProfileRecord {
    /// Whether this is the naive kernel's profile.
    pub fn is_naive(&self) -> bool {
        self.step == ORIGINAL_STEP
    }
}
