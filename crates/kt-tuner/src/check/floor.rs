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
//! back-to-back launches, so its floor is zero.
//!
//! The flop count sets a second floor only where the sidecar says every flop is done whatever the data
//! (`flops_exact`, a matmul): elsewhere `flops` is an upper bound (mandelbrot's `max_iter`) and a kernel
//! may skip work honestly. The rate is the FP32 units', or [`TENSOR_CORE_FACTOR`] times it for a kernel
//! that calls tensor-core instructions. A memoised matmul that reads its inputs (above the memory floor)
//! but multiplies nothing falls below this one.

/// How far above an unconfirmed bandwidth ceiling a time may be before it is impossible (clock and
/// measurement slack, and room for a ceiling that is only a copy's bandwidth).
pub const BANDWIDTH_SLACK: f64 = 1.1;

/// How far above a confirmed ceiling: event timing and clock slack only.
pub const CONFIRMED_SLACK: f64 = 1.03;

/// How many times the FP32 rate a kernel calling tensor-core instructions may reach (dense FP16/BF16 on
/// Hopper is about 15 times its FP32 rate): a floor no honest float kernel crosses.
pub const TENSOR_CORE_FACTOR: f64 = 16.0;

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
    /// The FP32 rate (GFLOP/s), confirmed by kt's FMA kernel or not: the compute floor of kernels whose
    /// `flops` are exact.
    pub fp32: Option<Ceiling>,
}

/// The floor of one launch, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Floor {
    pub ms: f64,
    pub why: String,
    pub confirmed: bool,
    /// The sidecar's figure that would be wrong if the kernel is honest (`bytes` or `flops`).
    pub figure: &'static str,
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
            fp32: None,
        }
    }

    /// The same ceilings with the FP32 rate as the compute ceiling.
    pub fn with_fp32(self, fp32: Ceiling) -> Ceilings {
        Ceilings {
            fp32: Some(fp32),
            ..self
        }
    }

    /// The floor of a launch that moves `bytes` and, when `exact_flops` is given, must do that many
    /// floating-point operations: the higher of the memory and compute floors.
    pub fn launch_floor(
        &self,
        bytes: Option<f64>,
        exact_flops: Option<f64>,
        tensor_cores: bool,
    ) -> Option<Floor> {
        let memory = bytes.and_then(|b| self.floor(b));
        let compute = exact_flops.and_then(|f| self.compute_floor(f, tensor_cores));
        match (memory, compute) {
            (Some(m), Some(c)) => Some(if c.ms > m.ms { c } else { m }),
            (m, c) => m.or(c),
        }
    }

    /// The floor of a launch doing `flops` floating-point operations at the FP32 rate (times
    /// [`TENSOR_CORE_FACTOR`] with tensor cores): None without a rate.
    pub fn compute_floor(&self, flops: f64, tensor_cores: bool) -> Option<Floor> {
        let c = self.fp32.as_ref()?;
        let rate = c.value.filter(|r| *r > 0.0)?;
        if flops.is_nan() || flops <= 0.0 {
            return None;
        }
        let slack = if c.confirmed {
            CONFIRMED_SLACK
        } else {
            BANDWIDTH_SLACK
        };
        let (units, factor) = if tensor_cores {
            ("the tensor cores", TENSOR_CORE_FACTOR)
        } else {
            ("the FP32 units", 1.0)
        };
        let gflops = rate * slack * factor;
        Some(Floor {
            ms: flops / (gflops * 1e9) * 1e3,
            why: format!(
                "{flops:.0} floating-point operations, every one done whatever the data (`flops_exact`), \
                 at {gflops:.0} GFLOP/s at best on {units}: {}",
                c.basis
            ),
            confirmed: c.confirmed,
            figure: "`flops` overstates the work the kernel must do",
        })
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
            figure: "`bytes` overstates what the kernel moves",
        })
    }
}

/// The complaint about a time below its floor, or None. Only an unconfirmed ceiling is named as a
/// possible culprit.
pub fn impossible(ms: f64, floor: &Floor) -> Option<String> {
    let culprits = if floor.confirmed {
        format!(
            "the timed launches cannot have done the verified work, or the sidecar's {}",
            floor.figure
        )
    } else {
        format!(
            "the timed launches cannot have done the verified work, the sidecar's {}, or the \
             unconfirmed ceiling is too low",
            floor.figure
        )
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
    fn a_matmul_whose_flops_are_exact_cannot_outrun_the_fp32_units() {
        // 2 * 4096^3 flops at 67 TFLOP/s: about 2 ms; a memoised copy of C reads A and B (above the
        // memory floor) in 0.06 ms
        let c = h100().with_fp32(Ceiling::confirm(
            Some(67_000.0),
            Some(60_000.0),
            "GFLOP/s",
            "kt's FMA kernel",
        ));
        let flops = 2.0 * 4096f64.powi(3);
        let bytes = 3.0 * 4.0 * 4096f64.powi(2);
        let f = c.launch_floor(Some(bytes), Some(flops), false).unwrap();
        assert!(f.ms > 1.9 && f.ms < 2.1, "{}", f.ms);
        let why = impossible(0.06, &f).unwrap();
        assert!(
            why.contains("`flops` overstates") && why.contains("FP32 units"),
            "{why}"
        );
        // with tensor cores the floor is 16 times lower; without exact flops only the memory floor counts
        let t = c.launch_floor(Some(bytes), Some(flops), true).unwrap();
        assert!((t.ms * TENSOR_CORE_FACTOR - f.ms).abs() < 1e-9);
        let m = c.launch_floor(Some(bytes), None, false).unwrap();
        assert!(m.figure.contains("`bytes`") && m.ms < 0.1, "{}", m.ms);
        assert_eq!(h100().launch_floor(None, Some(flops), false), None);
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
