//! What the tuner hands back: a `Verdict` per configuration (or per test of a verification), the
//! `Measurement` of one configuration, a whole run's `TuneResult` with where its time went (`Phases`), the
//! `Progress` events of a run, a verification's `VerifyReport` and a reference run's `ReferenceOutputs`.
//! Plain data: the results cache and the Kernel Tuner export read these without knowing how they were made.

use serde::{Deserialize, Serialize};

use crate::check::guard::GuardBreach;
use crate::check::measure::TimingStats;
use crate::check::verify::OutputReport;
use crate::model::geometry::LaunchDims;
use crate::model::space::Config;
use crate::search::Strategy;
use crate::worker::protocol::{DeviceInfo, RecordedOutput, RunOutcome};

/// What happened to one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
///
/// Five failures are never confused: the kernel is not there (`KernelNotFound`), it does not compile
/// (`CompileError`), its launch fails (`Invalid`: refused by the driver; `Crashed`: it faulted), it hangs
/// (`Timeout`), or it computes a verified wrong answer (`WrongAnswer`). `Nondeterministic`: it verified, but
/// reruns on the same inputs gave other outputs. Three more name what a reward-hacking kernel does:
/// `OutOfBounds` (it wrote into the guard bytes around a buffer), `TimedRunDiffers` (its timed launches
/// are not the verified work: the last one's outputs are wrong, or the checked launch is far slower than
/// the unchecked ones), `ImpossibleTime` (a verified time below what its bytes allow on this device, still
/// so after re-verifying) and `CarriesState` (right on each input from a freshly loaded module, wrong when
/// the inputs follow each other in one module: it carries state from one call to the next).
pub enum Verdict {
    Ok,
    WrongAnswer {
        details: Vec<String>,
        reports: Vec<OutputReport>,
    },
    CompileError {
        log: String,
    },
    Invalid {
        reason: String,
    },
    Timeout {
        after_s: f64,
    },
    Crashed {
        reason: String,
    },
    KernelNotFound {
        name: String,
        detail: String,
    },
    Nondeterministic {
        details: Vec<String>,
    },
    OutOfBounds {
        details: Vec<String>,
        breaches: Vec<GuardBreach>,
    },
    TimedRunDiffers {
        details: Vec<String>,
    },
    ImpossibleTime {
        details: Vec<String>,
    },
    CarriesState {
        details: Vec<String>,
    },
}

impl Verdict {
    pub fn is_ok(&self) -> bool {
        matches!(self, Verdict::Ok)
    }

    pub fn short(&self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::WrongAnswer { .. } => "wrong answer",
            Verdict::CompileError { .. } => "compile error",
            Verdict::Invalid { .. } => "launch error",
            Verdict::Timeout { .. } => "timeout",
            Verdict::Crashed { .. } => "launch error (crashed)",
            Verdict::KernelNotFound { .. } => "kernel not found",
            Verdict::Nondeterministic { .. } => "nondeterministic",
            Verdict::OutOfBounds { .. } => "out-of-bounds write",
            Verdict::TimedRunDiffers { .. } => "timed launches differ",
            Verdict::ImpossibleTime { .. } => "impossibly fast",
            Verdict::CarriesState { .. } => "state carried between inputs",
        }
    }

    /// What went wrong, in words (for a verdict that ends a reference run).
    pub fn reason(&self) -> String {
        match self {
            Verdict::Ok => "no failure".into(),
            Verdict::WrongAnswer { details, .. } => details.join("; "),
            Verdict::CompileError { log: detail } | Verdict::Invalid { reason: detail } => {
                format!("{}: {detail}", self.short())
            }
            Verdict::Crashed { reason } => format!("launch error (the kernel crashed): {reason}"),
            Verdict::Timeout { after_s } => {
                format!("timeout: no reply within {after_s:.1} s (hung kernel?); worker killed")
            }
            Verdict::KernelNotFound { name, detail } => {
                format!("kernel not found: `{name}`: {detail}")
            }
            // the verdicts that name a kernel gaming its measurement: their name, then what was seen
            Verdict::Nondeterministic { details }
            | Verdict::OutOfBounds { details, .. }
            | Verdict::TimedRunDiffers { details }
            | Verdict::ImpossibleTime { details }
            | Verdict::CarriesState { details } => {
                format!("{}: {}", self.short(), details.join("; "))
            }
        }
    }

    /// A failed compile: "kernel not found" when NVRTC's log says the kernel's name names nothing, else a
    /// compile error with the log.
    pub fn from_compile_log(log: &str, kernel_name: &str) -> Verdict {
        if crate::compile::nvrtc::log_says_kernel_missing(log, kernel_name) {
            Verdict::KernelNotFound {
                name: kernel_name.to_string(),
                detail: format!(
                    "no __global__ function of that name in the compiled source\n{log}"
                ),
            }
        } else {
            Verdict::CompileError {
                log: log.to_string(),
            }
        }
    }

    /// A module that compiled but could not be loaded or launched: "kernel not found" when the worker did
    /// not find its symbol, else a launch error.
    pub fn from_load_failure(message: String, kernel_name: &str) -> Verdict {
        if message.starts_with(crate::worker::protocol::KERNEL_NOT_FOUND) {
            Verdict::KernelNotFound {
                name: kernel_name.to_string(),
                detail: message,
            }
        } else {
            Verdict::Invalid { reason: message }
        }
    }
}

impl Verdict {
    /// The verdict on a verifying run (`None`: it passed): a write into a guard region first (the outputs
    /// of such a kernel may well be right), then its outputs and inputs, then its checked timed launch.
    pub fn from_outcome(o: &RunOutcome, test: Option<&str>) -> Option<Verdict> {
        let prefix = test.map(|t| format!("test {t}: ")).unwrap_or_default();
        if let Some(v) = Verdict::from_breaches(&o.guard_breaches, test) {
            return Some(v);
        }
        if let Some(v) = Verdict::from_checks(&o.outputs, &o.inputs_modified, test) {
            return Some(v);
        }
        let problems = o
            .timed_check
            .as_ref()
            .map(|c| c.problems())
            .unwrap_or_default();
        (!problems.is_empty()).then(|| Verdict::TimedRunDiffers {
            details: problems.iter().map(|p| format!("{prefix}{p}")).collect(),
        })
    }

    /// `OutOfBounds` for guard bytes a launch overwrote; `None` when there are none.
    pub fn from_breaches(breaches: &[GuardBreach], test: Option<&str>) -> Option<Verdict> {
        if breaches.is_empty() {
            return None;
        }
        let prefix = test.map(|t| format!("test {t}: ")).unwrap_or_default();
        Some(Verdict::OutOfBounds {
            details: breaches
                .iter()
                .map(|b| format!("{prefix}{}", b.describe()))
                .collect(),
            breaches: breaches.to_vec(),
        })
    }

    /// The verdict on a run's checks: `None` when every output matches and no input changed, else a wrong
    /// answer listing each failed output and each modified input (prefixed by the test, when named).
    pub fn from_checks(
        outputs: &[OutputReport],
        inputs_modified: &[String],
        test: Option<&str>,
    ) -> Option<Verdict> {
        let bad: Vec<&OutputReport> = outputs.iter().filter(|o| !o.passed()).collect();
        if bad.is_empty() && inputs_modified.is_empty() {
            return None;
        }
        let prefix = test.map(|t| format!("test {t}: ")).unwrap_or_default();
        let mut details: Vec<String> = bad
            .iter()
            .map(|o| format!("{prefix}{}", o.describe()))
            .collect();
        details.extend(
            inputs_modified
                .iter()
                .map(|n| format!("{prefix}input {n} was modified by the kernel")),
        );
        Some(Verdict::WrongAnswer {
            details,
            reports: bad.into_iter().cloned().collect(),
        })
    }
}

/// One configuration's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub config: Config,
    pub verdict: Verdict,
    /// Timing of the first test (the objective sums the medians over all tests).
    pub timing: Option<TimingStats>,
    pub objective: Option<f64>,
    pub per_test_ms: Vec<f64>,
    pub launch: Option<LaunchDims>,
    pub compile_ms: f64,
    pub benchmark_ms: f64,
    pub registers: Option<i32>,
    pub local_bytes: Option<i32>,
    pub static_shared_bytes: Option<i32>,
    pub occupancy: Option<f64>,
    pub gbps: Option<f64>,
    pub gflops: Option<f64>,
    pub percent_of_peak: Option<f64>,
    /// What a share of peak above 100 % means (the kernel skips work, its data sits in L2, or an
    /// unconfirmed ceiling is too low); None at or below 100 %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_note: Option<String>,
    pub from_cache: bool,
    /// GPU time of its timed launches over every test, spent and needed (`kt_record::tuning_efficiency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<kt_record::GpuTime>,
}

impl Measurement {
    pub fn objective_ms(&self) -> Option<f64> {
        if self.verdict.is_ok() {
            self.objective
        } else {
            None
        }
    }

    /// A measurement without a GPU (for tests of strategies, caches and exports).
    pub fn synthetic(config: Config, verdict: Verdict, ms: Option<f64>) -> Self {
        Measurement {
            config,
            verdict,
            timing: ms.and_then(|m| TimingStats::from_samples(&[m])),
            objective: ms,
            per_test_ms: ms.into_iter().collect(),
            launch: None,
            compile_ms: 0.0,
            benchmark_ms: 0.0,
            registers: None,
            local_bytes: None,
            static_shared_bytes: None,
            occupancy: None,
            gbps: None,
            gflops: None,
            percent_of_peak: None,
            peak_note: None,
            from_cache: false,
            gpu: None,
        }
    }
}

/// Where the wall time went (milliseconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// Worker start and CUDA context creation (overlapped with compilation).
    pub context_ms: f64,
    /// Uploading or generating the tests' arrays.
    pub upload_ms: f64,
    /// NVRTC time summed over all compilations (CPU time on the pool, overlapped).
    pub compile_cpu_ms: f64,
    /// Time the benchmark loop waited for a compilation to finish.
    pub compile_wait_ms: f64,
    /// Reference launches (expected outputs, poison probe, baseline timing).
    pub reference_ms: f64,
    /// The search itself, from the first configuration to the last.
    pub benchmark_ms: f64,
    pub total_ms: f64,
    /// Time spent waiting for turns on a GPU shared with other kt processes (inside the other phases).
    #[serde(default)]
    pub gpu_turns_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TuneResult {
    pub kernel_name: String,
    pub device: DeviceInfo,
    pub strategy: Strategy,
    pub space_size: usize,
    pub best: Option<Measurement>,
    /// The default launch, measured on the same tests.
    pub reference: Option<Measurement>,
    pub measurements: Vec<Measurement>,
    pub phases: Phases,
    /// The copy bandwidth kt measured (GB/s): it confirms the theoretical bandwidth, or not.
    pub peak_gbps: Option<f64>,
    /// The FP32 rate kt's FMA kernel reached (GFLOP/s): it confirms the theoretical FP32 rate, or not.
    #[serde(default)]
    pub peak_fp32_gflops: Option<f64>,
    pub worker_restarts: usize,
    /// The device's theoretical DRAM bandwidth and FP32 rate: the ceilings % of peak is taken against.
    #[serde(default)]
    pub theoretical_peaks: Option<kt_profile::DevicePeaks>,
    /// The GPU time the tuning's ranking needed beside its wall time (`kt_record::tuning_efficiency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<kt_record::TuningEfficiency>,
}

impl TuneResult {
    pub fn speedup(&self) -> Option<f64> {
        Some(self.reference.as_ref()?.objective_ms()? / self.best.as_ref()?.objective_ms()?)
    }

    /// Why the best is slower than the default launch, or is not the default: see [`slower_best_note`].
    /// Also says when the default launch is the best because nothing of the space that verified is faster.
    pub fn slower_best_note(&self) -> Option<String> {
        let default = self.reference.as_ref()?;
        let default_wins = self
            .best
            .as_ref()
            .is_some_and(|b| b.config == default.config)
            && self
                .measurements
                .iter()
                .any(|m| m.verdict.is_ok() && m.config != default.config);
        if default_wins {
            return Some(format!(
                "no configuration of the space is faster than the default launch {}: it is the best",
                default.config
            ));
        }
        slower_best_note(default, self.best.as_ref())
    }
}

/// Why `best` is not the `default` launch although the default is faster, or why the default is not the
/// best at all: it was refused (its verdict), or nothing checked it (a tuning without verification delivers
/// the fastest of the space as measured). None when there is nothing to explain.
pub fn slower_best_note(default: &Measurement, best: Option<&Measurement>) -> Option<String> {
    // the default's time as measured, also when a later check refused it
    let slower = match (best.and_then(Measurement::objective_ms), default.objective) {
        (Some(b), Some(d)) => d < b,
        _ => false,
    };
    if !default.verdict.is_ok() {
        let consequence = if best.is_some() {
            format!(
                "so it is not the best{}",
                if slower { " although faster" } else { "" }
            )
        } else {
            "and nothing is delivered: every configuration runs the same code".to_string()
        };
        return Some(format!(
            "the default launch {} was refused ({}), {consequence}: {}",
            default.config,
            default.verdict.short(),
            default.verdict.reason()
        ));
    }
    slower.then(|| {
        format!(
            "the default launch {} is faster than every configuration of the space; without verification \
             it was not checked and is not offered as the best: keep the default launch",
            default.config
        )
    })
}

/// Progress events for a bar or a log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub config: Config,
    pub verdict: String,
    pub time_ms: Option<f64>,
    pub best_ms: Option<f64>,
}

/// Per-test outcome of `verify`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestVerdict {
    pub test: String,
    pub verdict: Verdict,
    pub outputs: Vec<OutputReport>,
    pub inputs_modified: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyReport {
    pub tests: Vec<TestVerdict>,
    /// Both modules were loaded afresh before every test after the first (globals at their initial
    /// values).
    #[serde(default)]
    pub modules_reloaded: bool,
    /// The tests also ran back to back in one loaded module, no reload between them (state carried from
    /// one input to the next would show there).
    #[serde(default)]
    pub back_to_back: bool,
}

impl VerifyReport {
    pub fn passed(&self) -> bool {
        self.tests.iter().all(|t| t.verdict.is_ok())
    }
}

/// One test's outputs as written by a reference run (`Tuner::run_reference`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceOutputs {
    pub test_id: String,
    /// Every output of the test, in parameter order, with where it was written.
    pub outputs: Vec<RecordedOutput>,
    /// The launch's timing, when asked for.
    pub timing: Option<TimingStats>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_best_slower_than_the_default_says_why() {
        let config = |b| crate::model::space::Config::ints([("block_size_x", b)]);
        let default = Measurement::synthetic(config(256), Verdict::Ok, Some(0.2268));
        let slower = Measurement::synthetic(config(128), Verdict::Ok, Some(0.7878));
        let faster = Measurement::synthetic(config(128), Verdict::Ok, Some(0.1));
        assert_eq!(slower_best_note(&default, Some(&faster)), None);
        assert_eq!(slower_best_note(&default, Some(&default)), None);
        let unchecked = slower_best_note(&default, Some(&slower)).unwrap();
        assert!(unchecked.contains("keep the default launch"), "{unchecked}");
        let mut refused = default.clone();
        refused.verdict = Verdict::CarriesState {
            details: vec!["test gen2: right from a freshly loaded module".into()],
        };
        let why = slower_best_note(&refused, Some(&slower)).unwrap();
        assert!(
            why.contains("block_size_x=256 was refused (state carried between inputs)")
                && why.contains("although faster")
                && why.contains("test gen2"),
            "{why}"
        );
        let none = slower_best_note(&refused, None).unwrap();
        assert!(none.contains("nothing is delivered"), "{none}");
    }

    #[test]
    fn each_failure_is_named_as_itself() {
        let all = [
            Verdict::from_compile_log("kernel.cu(2): error: identifier \"k\" is undefined", "k"),
            Verdict::from_compile_log("kernel.cu(2): error: expected a \";\"", "k"),
            Verdict::from_load_failure("launch refused: CUDA_ERROR_INVALID_VALUE".into(), "k"),
            Verdict::Timeout { after_s: 2.0 },
            Verdict::from_checks(&[], &["a".to_string()], Some("t0")).unwrap(),
            Verdict::from_load_failure(
                format!("{}: no symbol", crate::worker::protocol::KERNEL_NOT_FOUND),
                "k",
            ),
        ];
        let shorts: Vec<&str> = all.iter().map(Verdict::short).collect();
        assert_eq!(
            shorts,
            [
                "kernel not found",
                "compile error",
                "launch error",
                "timeout",
                "wrong answer",
                "kernel not found"
            ]
        );
        for v in &all {
            assert!(
                v.reason().starts_with(match v.short() {
                    "wrong answer" => "test t0",
                    s => s,
                }),
                "{}",
                v.reason()
            );
        }
    }

    #[test]
    fn only_a_verified_mismatch_is_a_wrong_answer() {
        assert_eq!(Verdict::from_checks(&[], &[], None), None);
        let Some(Verdict::WrongAnswer { details, .. }) =
            Verdict::from_checks(&[], &["x".to_string()], None)
        else {
            panic!("a modified input is a wrong answer");
        };
        assert_eq!(details, vec!["input x was modified by the kernel"]);
    }

    fn passing_report(name: &str) -> OutputReport {
        crate::check::verify::compare_host(
            name,
            kt_record::DType::Float32,
            crate::check::verify::Tolerance::default(),
            &[1.0],
            &[false],
            &[1.0],
        )
    }

    #[test]
    fn a_write_past_the_end_is_its_own_verdict_even_with_right_outputs() {
        let mut o = RunOutcome::empty(crate::worker::protocol::RunStatus::Ok);
        o.outputs.push(passing_report("c"));
        assert_eq!(Verdict::from_outcome(&o, Some("t0")), None);
        o.guard_breaches.push(GuardBreach {
            array: "c".into(),
            side: crate::check::guard::Side::After,
            span: 4,
            distance: 0,
        });
        let v = Verdict::from_outcome(&o, Some("t0")).unwrap();
        assert_eq!(v.short(), "out-of-bounds write");
        assert_eq!(
            v.reason(),
            "out-of-bounds write: test t0: wrote 4 bytes past the end of `c`"
        );
    }

    #[test]
    fn a_timed_launch_that_left_poison_or_skipped_work_rejects_the_configuration() {
        use crate::worker::protocol::TimedCheck;
        let mut o = RunOutcome::empty(crate::worker::protocol::RunStatus::Ok);
        o.outputs.push(passing_report("c"));
        let mut never = passing_report("c");
        never.mismatches = 1;
        never.never_written = 1;
        let timed = |outputs, checked_ms, unchecked_median_ms| {
            Some(TimedCheck {
                outputs,
                inputs_modified: vec![],
                guard_breaches: vec![],
                checked_ms,
                unchecked_median_ms,
                late: None,
                wrong_timed_launch: None,
            })
        };
        o.timed_check = timed(vec![never], 1.0, 1.0);
        let v = Verdict::from_outcome(&o, Some("t0")).unwrap();
        assert_eq!(v.short(), "timed launches differ");
        assert!(
            v.reason()
                .contains("test t0: the last timed launch's output c"),
            "{}",
            v.reason()
        );
        // right outputs, but the unwatched samples were 10x faster than the watched launch
        o.timed_check = timed(vec![passing_report("c")], 1.0, 0.1);
        let v = Verdict::from_outcome(&o, None).unwrap();
        assert!(
            v.reason().contains("did not do the verified work"),
            "{}",
            v.reason()
        );
        // within noise of each other: sound
        o.timed_check = timed(vec![passing_report("c")], 1.2, 1.0);
        assert_eq!(Verdict::from_outcome(&o, None), None);
    }

    #[test]
    fn verdicts_round_trip_through_json() {
        for v in [
            Verdict::KernelNotFound {
                name: "ns::k".into(),
                detail: "d".into(),
            },
            Verdict::Nondeterministic {
                details: vec!["out differs".into()],
            },
            Verdict::TimedRunDiffers {
                details: vec!["x".into()],
            },
            Verdict::ImpossibleTime {
                details: vec!["y".into()],
            },
        ] {
            let text = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<Verdict>(&text).unwrap(), v);
        }
    }
}
