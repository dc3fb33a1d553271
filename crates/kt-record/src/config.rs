//! What tuning made of a kernel's configurations, as `best.cu`'s header records it: per parameter the values
//! with which some configuration verified, and every configuration that failed with its verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One configuration that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedConfiguration {
    /// `name=value` pairs in the kernel's parameter order.
    pub config: Vec<(String, i64)>,
    /// `wrong answer`, `compile error`, `invalid`, `timeout`, `crashed`, ...
    pub verdict: String,
    /// The first line of the reason.
    pub detail: String,
}

/// The configurations of one tuned kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigRecord {
    /// Per parameter, the values of the configurations that verified, ascending.
    pub verified_values: BTreeMap<String, Vec<i64>>,
    pub failed: Vec<FailedConfiguration>,
}
