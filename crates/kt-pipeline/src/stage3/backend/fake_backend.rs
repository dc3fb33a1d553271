//! A [`TuningBackend`] without a GPU, for tests and for recording demo cassettes. A candidate's outcome is
//! read from a marker comment in its code, so a scripted LLM answer says what "the GPU" will make of it:
//!
//! ```text
//! // fake-tuning: ok 4.5            verified, 4.5 ms (noise 1% unless `noise 0.2` follows)
//! // fake-tuning: compile-error 'x' undeclared
//! // fake-tuning: wrong-answer
//! // fake-tuning: timeout
//! // fake-tuning: crash
//! ```
//! Code without a marker is verified at the reference time (correct, but no faster). The backend remembers every
//! kernel it was asked about, so tests can check what reached the GPU. Separate launches ([`TuningBackend::
//! time_pair`]) take the kernel's verified time, spread by its noise in a fixed pseudo-random pattern.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::stage3::backend::tuning_backend::{
    BackendError, Mismatch, Outcome, PairTimes, ProfileRun, Reference, TuningBackend,
    TuningProgress,
};
use crate::stage3::tunable_code::TunableCode;

const MARKER: &str = "fake-tuning:";

#[derive(Debug)]
pub struct FakeBackend {
    reference_ms: f64,
    /// When set, every call fails as if there were no GPU.
    no_gpu: bool,
    /// Outcomes handed out in call order before markers are consulted (for kernels without markers).
    queued: Mutex<std::collections::VecDeque<Outcome>>,
    evaluated: Mutex<Vec<(String, TunableCode)>>,
    /// Verified time and noise of every kernel evaluated, by content hash: what its launches take.
    timed: Mutex<std::collections::HashMap<String, (f64, f64)>>,
    /// What `profile` answers for every kernel; none: profiles are off.
    profile: Option<kt_profile::KernelProfile>,
    /// The device's peaks and the kernel's arithmetic intensity, with the original's GFLOP/s (the others'
    /// follow from their times): the roofline's facts.
    roofline: Option<FakeRoofline>,
    profiled: Mutex<Vec<(String, BTreeMap<String, i64>)>>,
}

/// A fake device's roofline facts.
#[derive(Debug, Clone, Copy)]
struct FakeRoofline {
    peaks: kt_profile::DevicePeaks,
    intensity: f64,
    reference_gflops: f64,
}

impl FakeBackend {
    /// A fake GPU on which the original kernel takes `reference_ms`.
    pub fn new(reference_ms: f64) -> Self {
        Self {
            reference_ms,
            no_gpu: false,
            queued: Mutex::default(),
            evaluated: Mutex::new(Vec::new()),
            timed: Mutex::default(),
            profile: None,
            roofline: None,
            profiled: Mutex::default(),
        }
    }

    /// A fake GPU that answers the first evaluations with `times` (verified, in ms, 1% noise) in call order,
    /// then falls back to markers.
    pub fn with_times(reference_ms: f64, times: &[f64]) -> Self {
        let queued = times
            .iter()
            .map(|&t| Outcome::Verified {
                time_ms: t,
                noise_ms: t * 0.01,
                best_params: BTreeMap::new(),
                configs_tried: 1,
                configs_failed: 0,
                percent_of_peak: None,
                gflops: None,
                efficiency: None,
            })
            .collect();
        Self {
            reference_ms,
            no_gpu: false,
            queued: Mutex::new(queued),
            evaluated: Mutex::new(Vec::new()),
            timed: Mutex::default(),
            profile: None,
            roofline: None,
            profiled: Mutex::default(),
        }
    }

    /// A machine without a GPU: every call returns [`BackendError::GpuUnavailable`].
    pub fn without_gpu() -> Self {
        Self {
            reference_ms: 0.0,
            no_gpu: true,
            queued: Mutex::default(),
            evaluated: Mutex::new(Vec::new()),
            timed: Mutex::default(),
            profile: None,
            roofline: None,
            profiled: Mutex::default(),
        }
    }

    /// Answers every `profile` call with `profile` (e.g. one parsed from a captured ncu report).
    pub fn with_profile(mut self, profile: kt_profile::KernelProfile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// A device with `peaks`, on which the original kernel achieves `reference_gflops` at `intensity` FLOP
    /// per byte; a faster kernel achieves proportionally more.
    pub fn with_roofline(
        mut self,
        peaks: kt_profile::DevicePeaks,
        intensity: f64,
        reference_gflops: f64,
    ) -> Self {
        self.roofline = Some(FakeRoofline {
            peaks,
            intensity,
            reference_gflops,
        });
        self
    }

    /// Every `(label, parameters)` profiled so far, in call order.
    pub fn profiled(&self) -> Vec<(String, BTreeMap<String, i64>)> {
        self.profiled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// GFLOP/s of a kernel taking `time_ms`, on a device with roofline facts.
    fn gflops_at(&self, time_ms: f64) -> Option<f64> {
        self.roofline
            .map(|r| r.reference_gflops * self.reference_ms / time_ms)
    }

    /// Share (%) of the binding roofline ceiling of a kernel taking `time_ms`, on a device with roofline facts.
    fn percent_at(&self, time_ms: f64) -> Option<f64> {
        let r = self.roofline?;
        let ceiling = r
            .peaks
            .fp32_gflop_s
            .min(r.intensity * r.peaks.bandwidth_gb_s);
        Some(100.0 * self.gflops_at(time_ms)? / ceiling)
    }

    /// Every `(label, kernel)` evaluated so far, in call order.
    pub fn evaluated(&self) -> Vec<(String, TunableCode)> {
        self.evaluated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn check_gpu(&self) -> Result<(), BackendError> {
        if self.no_gpu {
            return Err(BackendError::GpuUnavailable {
                detail: "no CUDA device (fake backend configured without a GPU)".into(),
            });
        }
        Ok(())
    }

    fn first_config(kernel: &TunableCode) -> String {
        kernel
            .parameters
            .iter()
            .map(|p| {
                format!(
                    "{}={}",
                    p.name,
                    p.values.first().copied().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn outcome_of(&self, kernel: &TunableCode) -> Outcome {
        let config = Self::first_config(kernel);
        let marker = kernel.code.lines().find_map(|l| {
            l.split_once(MARKER)
                .map(|(_, rest)| rest.trim().to_string())
        });
        let best_params: BTreeMap<String, i64> = kernel
            .parameters
            .iter()
            .map(|p| (p.name.clone(), p.values.last().copied().unwrap_or_default()))
            .collect();
        let verified = |time_ms: f64, noise_ms: f64| Outcome::Verified {
            time_ms,
            noise_ms,
            best_params: best_params.clone(),
            configs_tried: kernel.space_size().min(u64::from(u32::MAX)) as u32,
            configs_failed: 0,
            percent_of_peak: self.percent_at(time_ms),
            gflops: self.gflops_at(time_ms),
            efficiency: None,
        };
        let Some(marker) = marker else {
            return verified(self.reference_ms, self.reference_ms * 0.01);
        };
        let mut words = marker.split_whitespace();
        match words.next().unwrap_or_default() {
            "ok" => {
                let time: f64 = words
                    .next()
                    .and_then(|w| w.parse().ok())
                    .unwrap_or(self.reference_ms);
                let noise = match (words.next(), words.next()) {
                    (Some("noise"), Some(n)) => n.parse().unwrap_or(time * 0.01),
                    _ => time * 0.01,
                };
                verified(time, noise)
            }
            "compile-error" => Outcome::CompileError {
                config,
                log: format!(
                    "kernel.cu(12): error: {}",
                    words.collect::<Vec<_>>().join(" ")
                ),
            },
            "wrong-answer" => Outcome::WrongAnswer {
                config,
                test: "t1".into(),
                output: "C".into(),
                mismatches: vec![
                    Mismatch {
                        index: 4097,
                        expected: "1.25".into(),
                        got: "NaN (never written)".into(),
                    },
                    Mismatch {
                        index: 4098,
                        expected: "-0.5".into(),
                        got: "NaN (never written)".into(),
                    },
                ],
                mismatched: 93,
                total: 7161,
                detail: String::new(),
            },
            "timeout" => Outcome::Timeout {
                config,
                seconds: 10.0,
            },
            "crash" => Outcome::Crashed {
                config,
                detail: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            },
            "no-valid-config" => Outcome::NoValidConfig {
                detail: "every configuration uses too many registers".into(),
            },
            other => Outcome::Crashed {
                config,
                detail: format!("fake backend: unknown marker `{other}`"),
            },
        }
    }
}

#[async_trait]
impl TuningBackend for FakeBackend {
    async fn reference(&self, _original: &TunableCode) -> Result<Reference, BackendError> {
        self.check_gpu()?;
        Ok(Reference {
            time_ms: self.reference_ms,
            noise_ms: self.reference_ms * 0.01,
            percent_of_peak: None,
            gflops: self.roofline.map(|r| r.reference_gflops),
            device: "fake GPU".into(),
            theoretical_peaks: self.roofline.map(|r| r.peaks),
            arithmetic_intensity: self.roofline.map(|r| r.intensity),
        })
    }

    async fn profile(
        &self,
        label: &str,
        _kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
    ) -> Result<ProfileRun, BackendError> {
        self.check_gpu()?;
        self.profiled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((label.to_string(), params.clone()));
        Ok(match &self.profile {
            Some(p) => ProfileRun {
                profile: Some(p.clone()),
                skipped: None,
                seconds: 0.5,
                cached: false,
            },
            None => ProfileRun::skipped("the fake GPU was given no profile"),
        })
    }

    async fn evaluate(
        &self,
        label: &str,
        kernel: &TunableCode,
        progress: &dyn TuningProgress,
    ) -> Result<Outcome, BackendError> {
        self.check_gpu()?;
        self.evaluated
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((label.to_string(), kernel.clone()));
        let total = kernel.space_size();
        progress.update(label, total, total);
        let queued = self
            .queued
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let outcome = match queued {
            Some(Outcome::Verified {
                time_ms,
                noise_ms,
                configs_tried,
                configs_failed,
                percent_of_peak,
                gflops,
                efficiency,
                ..
            }) => {
                // The queued time stands for the best configuration: report the kernel's own parameters.
                let best_params = kernel
                    .parameters
                    .iter()
                    .map(|p| {
                        (
                            p.name.clone(),
                            p.values.first().copied().unwrap_or_default(),
                        )
                    })
                    .collect();
                Outcome::Verified {
                    time_ms,
                    noise_ms,
                    best_params,
                    configs_tried,
                    configs_failed,
                    percent_of_peak: percent_of_peak.or_else(|| self.percent_at(time_ms)),
                    gflops: gflops.or_else(|| self.gflops_at(time_ms)),
                    efficiency,
                }
            }
            Some(other) => other,
            None => self.outcome_of(kernel),
        };
        if let Outcome::Verified {
            time_ms, noise_ms, ..
        } = &outcome
        {
            self.timed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(kernel.content_hash(), (*time_ms, *noise_ms));
        }
        Ok(outcome)
    }

    async fn time_pair(
        &self,
        first: (&TunableCode, &BTreeMap<String, i64>),
        second: (&TunableCode, &BTreeMap<String, i64>),
        launches: u32,
    ) -> Result<PairTimes, BackendError> {
        self.check_gpu()?;
        Ok(PairTimes {
            test: "t1".into(),
            first_ms: self.launches(first.0, launches),
            second_ms: self.launches(second.0, launches),
        })
    }
}

impl FakeBackend {
    /// `n` launch times of `kernel`: its verified time (the reference time when never evaluated) spread by its
    /// noise, deterministically per kernel.
    fn launches(&self, kernel: &TunableCode, n: u32) -> Vec<f64> {
        let hash = kernel.content_hash();
        let (time, noise) = self
            .timed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&hash)
            .copied()
            .unwrap_or((self.reference_ms, self.reference_ms * 0.01));
        let mut x = u64::from_str_radix(&hash[..8], 16).unwrap_or(1) | 1;
        (0..n)
            .map(|_| {
                // xorshift: a fixed, kernel-specific sequence in [-1, 1).
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                time + noise * u
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stage3::backend::tuning_backend::NoProgress;

    fn kernel(code: &str) -> TunableCode {
        TunableCode {
            code: code.into(),
            parameters: vec![],
            restrictions: vec![],
            grid_divisors: crate::stage3::tunable_code::default_grid_divisors(),
            dynamic_shared_memory: None,
            seeds: Vec::new(),
        }
    }

    #[tokio::test]
    async fn markers_choose_the_outcome() {
        let b = FakeBackend::new(10.0);
        let ok = b
            .evaluate(
                "a",
                &kernel("// fake-tuning: ok 4.5 noise 0.2\n"),
                &NoProgress,
            )
            .await
            .unwrap();
        assert!(
            matches!(ok, Outcome::Verified { time_ms, noise_ms, .. } if time_ms == 4.5 && noise_ms == 0.2)
        );
        let ce = b
            .evaluate(
                "b",
                &kernel("// fake-tuning: compile-error 'x' undeclared"),
                &NoProgress,
            )
            .await
            .unwrap();
        assert!(matches!(&ce, Outcome::CompileError { log, .. } if log.contains("'x' undeclared")));
        let plain = b
            .evaluate("c", &kernel("__global__ void k() {}"), &NoProgress)
            .await
            .unwrap();
        assert!(matches!(plain, Outcome::Verified { time_ms, .. } if time_ms == 10.0));
        assert_eq!(b.evaluated().len(), 3);
    }

    #[tokio::test]
    async fn without_gpu_every_call_says_a_gpu_is_needed() {
        let b = FakeBackend::without_gpu();
        let err = b.reference(&kernel("")).await.unwrap_err();
        assert!(err.to_string().contains("GPU is needed"), "{err}");
    }

    #[tokio::test]
    async fn separate_launches_spread_by_the_noise_the_same_way_every_time() {
        let b = FakeBackend::new(10.0);
        let fast = kernel("// fake-tuning: ok 4.0 noise 0.2\n");
        b.evaluate("a", &fast, &NoProgress).await.unwrap();
        let none = BTreeMap::new();
        let original = kernel("__global__ void k() {}");
        let t = b
            .time_pair((&original, &none), (&fast, &none), 7)
            .await
            .unwrap();
        assert_eq!((t.first_ms.len(), t.second_ms.len()), (7, 7));
        assert!(t.second_ms.iter().all(|x| (3.8..=4.2).contains(x)), "{t:?}");
        assert!(t.first_ms.iter().all(|x| (9.9..=10.1).contains(x)), "{t:?}");
        assert!(
            t.second_ms.windows(2).any(|w| w[0] != w[1]),
            "launches vary"
        );
        let again = b
            .time_pair((&original, &none), (&fast, &none), 7)
            .await
            .unwrap();
        assert_eq!(t, again);
    }
}
