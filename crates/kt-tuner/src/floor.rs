//! The fastest time physics allows a launch: a kernel must move the bytes its sidecar says it moves
//! (`bytes`, its compulsory traffic), and the device moves them no faster than its memory bandwidth. A
//! verified time below that floor means the timing did not measure the verified work (results memoised
//! across launches, work skipped when unobserved) or the `bytes` expression is wrong: either way it is
//! re-verified and, if it stays below, rejected as suspicious rather than accepted.
//!
//! Only the bytes that cannot sit in L2 count: a test whose arrays fit in L2 may be served from it between
//! back-to-back launches, so its floor is zero. The flop count is not used: a sidecar's `flops` is an upper
//! bound for kernels whose loops depend on the data (mandelbrot's `max_iter`), so a floor from it would
//! reject honest kernels.

/// How far above the bandwidth ceiling a time may be before it is impossible (clock and measurement
/// slack).
pub const BANDWIDTH_SLACK: f64 = 1.1;

/// The ceilings a time is held against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ceilings {
    /// The best DRAM bandwidth known (GB/s): the theoretical one, or kt's measured copy bandwidth when
    /// higher or alone.
    pub bandwidth_gbps: Option<f64>,
    /// L2 bytes: that much of a test's data may be served from cache.
    pub l2_bytes: u64,
}

/// The floor of one launch, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Floor {
    pub ms: f64,
    pub why: String,
}

impl Ceilings {
    /// The floor of a launch moving `bytes` (its sidecar's expression, evaluated): None when there is no
    /// bandwidth figure or everything fits in L2.
    pub fn floor(&self, bytes: f64) -> Option<Floor> {
        let bw = self.bandwidth_gbps.filter(|b| *b > 0.0)?;
        let from_dram = bytes - self.l2_bytes as f64;
        if from_dram.is_nan() || from_dram <= 0.0 {
            return None;
        }
        let ms = from_dram / (bw * BANDWIDTH_SLACK * 1e9) * 1e3;
        Some(Floor {
            ms,
            why: format!(
                "{:.0} bytes beyond the L2's {} must come from memory at {:.0} GB/s at best",
                from_dram,
                self.l2_bytes,
                bw * BANDWIDTH_SLACK
            ),
        })
    }
}

/// The complaint about a time below its floor, or None.
pub fn impossible(ms: f64, floor: &Floor) -> Option<String> {
    (ms < floor.ms).then(|| {
        format!(
            "{ms:.4} ms is below the physical floor of {:.4} ms ({}): the timed launches cannot have \
             done the verified work, or the sidecar's `bytes` overstates what the kernel moves",
            floor.ms, floor.why
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Ceilings {
        Ceilings {
            bandwidth_gbps: Some(3350.0),
            l2_bytes: 50 << 20,
        }
    }

    #[test]
    fn a_vector_add_of_a_gigabyte_cannot_take_a_tenth_of_a_millisecond() {
        // 12 bytes per element, 2^26 elements: 768 MiB, ~0.2 ms at 3.35 TB/s
        let f = h100().floor(12.0 * (1u64 << 26) as f64).unwrap();
        assert!(f.ms > 0.18 && f.ms < 0.22, "{}", f.ms);
        let complaint = impossible(0.1, &f).unwrap();
        assert!(
            complaint.contains("below the physical floor"),
            "{complaint}"
        );
        assert_eq!(impossible(0.25, &f), None);
    }

    #[test]
    fn what_fits_in_l2_has_no_floor() {
        assert_eq!(h100().floor(40.0 * 1024.0 * 1024.0), None);
        // only what L2 cannot hold counts
        let f = h100().floor((60u64 << 20) as f64).unwrap();
        let expected = (10u64 << 20) as f64 / (3350.0 * BANDWIDTH_SLACK * 1e9) * 1e3;
        assert!((f.ms - expected).abs() < 1e-12);
    }

    #[test]
    fn without_a_bandwidth_there_is_no_floor() {
        let c = Ceilings {
            bandwidth_gbps: None,
            l2_bytes: 0,
        };
        assert_eq!(c.floor(1e12), None);
    }
}
