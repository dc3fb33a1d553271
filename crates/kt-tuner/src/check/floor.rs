//! The fastest time physics allows a launch: a kernel must move the bytes its sidecar says it moves
//! (`bytes`, its compulsory traffic), and the device moves them no faster than its memory bandwidth. A
//! verified time below that floor means the timing did not measure the verified work (results memoised
//! across launches, work skipped when unobserved) or the `bytes` expression is wrong: either way it is
//! re-verified and, if it stays below, rejected as unphysical rather than accepted.
//!
//! The ceiling is checked against what kt measures before it is trusted (`Ceilings::from_figures`): the
//! theoretical bandwidth with kt's copy bandwidth at or below it is *confirmed*, and a time faster than
//! it allows (3 % slack) is rejected with the ceiling never blamed. Without that confirmation the ceiling
//! may be what is wrong: the floor keeps 10 % slack and the message names the ceiling among the culprits.
//!
//! Only the bytes that cannot sit in L2 count: a test whose arrays fit in L2 may be served from it between
//! back-to-back launches, so its floor is zero. The flop count is not used: a sidecar's `flops` is an upper
//! bound for kernels whose loops depend on the data (mandelbrot's `max_iter`), so a floor from it would
//! reject honest kernels.

/// How far above an unconfirmed bandwidth ceiling a time may be before it is impossible (clock and
/// measurement slack, and room for a ceiling that is only a copy's bandwidth).
pub const BANDWIDTH_SLACK: f64 = 1.1;

/// How far above a confirmed ceiling: event timing and clock slack only.
pub const CONFIRMED_SLACK: f64 = 1.03;

/// A copy measured this much above the theoretical bandwidth contradicts it (a misreported clock).
pub const CONTRADICTS: f64 = 1.05;

/// The ceilings a time is held against.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceilings {
    /// The DRAM bandwidth (GB/s) a time is held against.
    pub bandwidth_gbps: Option<f64>,
    /// Whether kt's own measurement backs that figure: the device's theoretical bandwidth, with kt's
    /// measured copy bandwidth at or below it. An unconfirmed ceiling (one figure alone, or a copy faster
    /// than the theoretical figure) may itself be what is wrong; a confirmed one may not.
    pub confirmed: bool,
    /// The figures behind it, in words, for messages.
    pub basis: String,
    /// L2 bytes: that much of a test's data may be served from cache.
    pub l2_bytes: u64,
}

/// The floor of one launch, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Floor {
    pub ms: f64,
    pub why: String,
    pub confirmed: bool,
}

/// One ceiling (a bandwidth or a FLOP rate), checked against what kt measured on the device.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    pub value: Option<f64>,
    /// Whether kt's own measurement backs it (see [`Ceiling::confirm`]).
    pub confirmed: bool,
    /// The figures behind it, in words.
    pub basis: String,
}

impl Ceiling {
    /// The ceiling from the device's theoretical figure and what kt measured on it (`by`, in `unit`):
    /// confirmed when both exist and the measurement is not above the theoretical figure (by more than
    /// [`CONTRADICTS`]); then the theoretical figure is the ceiling. A faster measurement means the
    /// theoretical figure is wrong: the measurement is the ceiling, unconfirmed. One figure alone is
    /// unconfirmed.
    pub fn confirm(
        theoretical: Option<f64>,
        measured: Option<f64>,
        unit: &str,
        by: &str,
    ) -> Ceiling {
        let t = theoretical.filter(|t| *t > 0.0);
        let m = measured.filter(|m| *m > 0.0);
        let (value, confirmed, basis) = match (t, m) {
            (Some(t), Some(m)) if m <= t * CONTRADICTS => (
                Some(t),
                true,
                format!("the theoretical {t:.0} {unit}, confirmed by {by} at {m:.0} {unit}"),
            ),
            (Some(t), Some(m)) => (
                Some(m),
                false,
                format!(
                    "{by} at {m:.0} {unit}, above the theoretical {t:.0} {unit} (a misreported clock?): \
                     unconfirmed"
                ),
            ),
            (Some(t), None) => (
                Some(t),
                false,
                format!("the theoretical {t:.0} {unit}, unconfirmed (not measured)"),
            ),
            (None, Some(m)) => (
                Some(m),
                false,
                format!("{by} at {m:.0} {unit}, unconfirmed (no theoretical figure)"),
            ),
            (None, None) => (None, false, format!("no {unit} figure")),
        };
        Ceiling {
            value,
            confirmed,
            basis,
        }
    }
}

impl Ceilings {
    /// The bandwidth ceiling from the device's theoretical figure and the copy bandwidth kt measured on it
    /// (both GB/s), as [`Ceiling::confirm`] judges them.
    pub fn from_figures(
        theoretical: Option<f64>,
        measured: Option<f64>,
        l2_bytes: u64,
    ) -> Ceilings {
        let c = Ceiling::confirm(theoretical, measured, "GB/s", "kt's copy");
        Ceilings {
            bandwidth_gbps: c.value,
            confirmed: c.confirmed,
            basis: c.basis,
            l2_bytes,
        }
    }

    /// The floor of a launch moving `bytes` (its sidecar's expression, evaluated): None when there is no
    /// bandwidth figure or everything fits in L2.
    pub fn floor(&self, bytes: f64) -> Option<Floor> {
        let bw = self.bandwidth_gbps.filter(|b| *b > 0.0)?;
        let from_dram = bytes - self.l2_bytes as f64;
        if from_dram.is_nan() || from_dram <= 0.0 {
            return None;
        }
        let slack = if self.confirmed {
            CONFIRMED_SLACK
        } else {
            BANDWIDTH_SLACK
        };
        let ms = from_dram / (bw * slack * 1e9) * 1e3;
        Some(Floor {
            ms,
            why: format!(
                "{:.0} bytes beyond the L2's {} must come from memory at {:.0} GB/s at best: {}",
                from_dram,
                self.l2_bytes,
                bw * slack,
                self.basis
            ),
            confirmed: self.confirmed,
        })
    }
}

/// The complaint about a time below its floor, or None. Only an unconfirmed ceiling is named as a
/// possible culprit.
pub fn impossible(ms: f64, floor: &Floor) -> Option<String> {
    let culprits = if floor.confirmed {
        "the timed launches cannot have done the verified work, or the sidecar's `bytes` overstates what \
         the kernel moves"
    } else {
        "the timed launches cannot have done the verified work, the sidecar's `bytes` overstates what the \
         kernel moves, or the unconfirmed ceiling is too low"
    };
    (ms < floor.ms).then(|| {
        format!(
            "{ms:.4} ms is below the physical floor of {:.4} ms ({}): {culprits}",
            floor.ms, floor.why
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Ceilings {
        Ceilings::from_figures(Some(3350.0), Some(3000.0), 50 << 20)
    }

    #[test]
    fn a_vector_add_of_a_gigabyte_cannot_take_a_tenth_of_a_millisecond() {
        // 12 bytes per element, 2^26 elements: 768 MiB, ~0.2 ms at 3.35 TB/s
        let f = h100().floor(12.0 * (1u64 << 26) as f64).unwrap();
        assert!(f.ms > 0.2 && f.ms < 0.24, "{}", f.ms);
        let complaint = impossible(0.1, &f).unwrap();
        assert!(
            complaint.contains("below the physical floor")
                && complaint.contains("confirmed by kt's copy at 3000 GB/s")
                && !complaint.contains("ceiling is too low"),
            "a confirmed ceiling is never blamed: {complaint}"
        );
        assert_eq!(impossible(0.25, &f), None);
    }

    #[test]
    fn what_fits_in_l2_has_no_floor() {
        assert_eq!(h100().floor(40.0 * 1024.0 * 1024.0), None);
        // only what L2 cannot hold counts
        let f = h100().floor((60u64 << 20) as f64).unwrap();
        let expected = (10u64 << 20) as f64 / (3350.0 * CONFIRMED_SLACK * 1e9) * 1e3;
        assert!((f.ms - expected).abs() < 1e-12);
    }

    #[test]
    fn without_a_bandwidth_there_is_no_floor() {
        let c = Ceilings::from_figures(None, None, 0);
        assert_eq!(c.floor(1e12), None);
    }

    #[test]
    fn a_time_at_105_percent_of_a_confirmed_ceiling_is_impossible() {
        // an H200: 4.8 TB/s theoretical, kt's copy at 4.1 TB/s; a kernel "moving" 1 GB at 105.5 %
        let c = Ceilings::from_figures(Some(4800.0), Some(4100.0), 60 << 20);
        assert!(c.confirmed);
        let bytes = 1e9;
        let ms = (bytes - (60u64 << 20) as f64) / (4800.0 * 1.055e9) * 1e3;
        assert!(impossible(ms, &c.floor(bytes).unwrap()).is_some());
        // an unconfirmed ceiling of the same figure leaves the slack a copy-only figure needs
        let u = Ceilings::from_figures(Some(4800.0), None, 60 << 20);
        assert!(!u.confirmed);
        assert_eq!(impossible(ms, &u.floor(bytes).unwrap()), None);
        let far = impossible(ms / 2.0, &u.floor(bytes).unwrap()).unwrap();
        assert!(far.contains("unconfirmed ceiling is too low"), "{far}");
    }

    #[test]
    fn a_copy_faster_than_the_theoretical_figure_unconfirms_it_and_becomes_the_ceiling() {
        let c = Ceilings::from_figures(Some(2000.0), Some(3000.0), 0);
        assert!(!c.confirmed);
        assert_eq!(c.bandwidth_gbps, Some(3000.0));
        assert!(c.basis.contains("misreported clock"), "{}", c.basis);
        let only_copy = Ceilings::from_figures(None, Some(3000.0), 0);
        assert_eq!(
            (only_copy.bandwidth_gbps, only_copy.confirmed),
            (Some(3000.0), false)
        );
    }
}
