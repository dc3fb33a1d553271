//! What a configuration that lost the race leaves behind (`crate::check::racing` decides; this is the record
//! kept with its timing and in the exported caches).

use serde::{Deserialize, Serialize};

/// Why a configuration stopped being sampled before the policy's target: the evidence, kept with its timing
/// and in the exported caches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RaceEvidence {
    /// Samples taken when it stopped.
    pub samples: u32,
    /// Median of those samples (ms).
    pub median_ms: f64,
    /// Its fastest sample (ms), the one compared with the bound.
    pub fastest_ms: f64,
    /// The best median it raced against (ms).
    pub best_ms: f64,
    /// The bound its fastest sample exceeded (ms): best × (1 + margin(samples)).
    pub bound_ms: f64,
}

impl RaceEvidence {
    /// One line for logs and reports.
    pub fn describe(&self) -> String {
        format!(
            "stopped after {} sample(s): fastest {:.4} ms > bound {:.4} ms (best {:.4} ms; median {:.4} ms)",
            self.samples, self.fastest_ms, self.bound_ms, self.best_ms, self.median_ms
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_evidence_reads_back_and_says_what_it_lost_on() {
        let e = RaceEvidence {
            samples: 2,
            median_ms: 2.5,
            fastest_ms: 2.2,
            best_ms: 2.0,
            bound_ms: 2.15,
        };
        let text = serde_json::to_string(&e).unwrap_or_default();
        assert_eq!(serde_json::from_str::<RaceEvidence>(&text).ok(), Some(e));
        assert_eq!(
            e.describe(),
            "stopped after 2 sample(s): fastest 2.2000 ms > bound 2.1500 ms (best 2.0000 ms; median 2.5000 ms)"
        );
    }
}
