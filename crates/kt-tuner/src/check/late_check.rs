//! The check after many launches, for kernels that keep state across launches (`__device__` or
//! `__managed__` variables they write). Such a kernel can count its launches and stop working once past the
//! few it expects to be verified: the verifying launch and the checked last timed sample only see launches
//! a counter can still wave through. So a checked request of such a kernel, once its timed samples are
//! checked, launches it up to [`LATE_LAUNCHES`] more times in the same module (unprepared and untimed, as a
//! program calling it in a loop would) and checks one more launch with its outputs poisoned. A counter
//! that lets fewer launches through than the samples and these is caught; one that waits longer is not,
//! and no finite check catches it.
//!
//! The launches are bounded by time as well as count ([`LATE_BUDGET_MS`]), so a slow kernel costs a few
//! hundred milliseconds per test, not its time several hundred times over.

use serde::{Deserialize, Serialize};

use crate::check::guard::GuardBreach;
use crate::check::verify::{OutputReport, launch_problems};

/// The most launches between the checked last timed sample and the late check.
pub const LATE_LAUNCHES: u32 = 256;

/// Roughly how long those launches may take, in all (milliseconds).
pub const LATE_BUDGET_MS: f64 = 250.0;

/// Never fewer launches than this, however slow the kernel: past the default sampling's few.
pub const LATE_MIN_LAUNCHES: u32 = 16;

/// How many more launches to run before the late check, for a kernel whose samples took `median_ms`, at
/// most `cap` (the policy's `late_check_launches`; 0: no late check).
pub fn launches_before(cap: u32, median_ms: f64) -> u32 {
    if cap == 0 {
        return 0;
    }
    let by_time = if median_ms > 0.0 && median_ms.is_finite() {
        (LATE_BUDGET_MS / median_ms).ceil().min(u32::MAX as f64) as u32
    } else {
        cap
    };
    by_time.clamp(LATE_MIN_LAUNCHES.min(cap), cap)
}

/// What the late check saw: the launch after `launches_before` more launches, checked like the verifying
/// one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LateCheck {
    /// Launches between the checked last timed sample and this check.
    pub launches_before: u32,
    pub outputs: Vec<OutputReport>,
    pub inputs_modified: Vec<String>,
    pub guard_breaches: Vec<GuardBreach>,
}

impl LateCheck {
    /// What is wrong with the late launch, one line each; empty when it is right.
    pub fn problems(&self) -> Vec<String> {
        let launch = format!(
            "after {} more launches in the same module (the kernel keeps state across launches), a \
             checked launch",
            self.launches_before
        );
        launch_problems(
            &launch,
            &self.outputs,
            &self.inputs_modified,
            &self.guard_breaches,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::verify::{Tolerance, compare_host};
    use kt_record::DType;

    #[test]
    fn fast_kernels_get_every_launch_slow_ones_a_time_budget() {
        assert_eq!(launches_before(0, 0.01), 0, "no late check asked for");
        assert_eq!(launches_before(LATE_LAUNCHES, 0.01), LATE_LAUNCHES);
        assert_eq!(launches_before(LATE_LAUNCHES, 5.0), 50);
        assert_eq!(launches_before(LATE_LAUNCHES, 200.0), LATE_MIN_LAUNCHES);
        assert_eq!(launches_before(8, 200.0), 8, "never past the cap");
        assert_eq!(launches_before(LATE_LAUNCHES, f64::NAN), LATE_LAUNCHES);
    }

    #[test]
    fn an_unwritten_output_after_many_launches_is_named_with_how_many() {
        let never = compare_host(
            "c",
            DType::Float32,
            Tolerance::default(),
            &[f64::NAN, f64::NAN],
            &[true, true],
            &[1.0, 2.0],
        );
        let late = LateCheck {
            launches_before: 256,
            outputs: vec![never],
            inputs_modified: vec![],
            guard_breaches: vec![],
        };
        let p = late.problems();
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("after 256 more launches in the same module"),
            "{p:?}"
        );
        assert!(p[0].contains("never written"), "{p:?}");
        let right = compare_host(
            "c",
            DType::Float32,
            Tolerance::default(),
            &[1.0],
            &[false],
            &[1.0],
        );
        let fine = LateCheck {
            outputs: vec![right],
            ..late
        };
        assert!(fine.problems().is_empty());
    }
}
