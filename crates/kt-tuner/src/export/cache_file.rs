//! Kernel Tuner's cache file, written as Kernel Tuner 1.5 writes and reads it: the header keys in its order
//! with `"cache"` last (its reader decides from the file's last characters whether the file was closed, and
//! reopens it for appending by cutting them), each entry keyed by its values joined with commas, `time` a JSON
//! float (its best-configuration search skips anything else) and failures under `__error__` with its
//! markers. kt's own facts travel in `kt_` keys, which Kernel Tuner ignores.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use crate::model::outcome::{Measurement, Verdict};

/// A JSON value whose objects keep their key order (serde_json's own map sorts them).
#[derive(Debug, Clone, PartialEq)]
pub enum Ordered {
    Value(Value),
    Object(Vec<(String, Ordered)>),
}

impl Ordered {
    pub fn object() -> Self {
        Ordered::Object(Vec::new())
    }

    /// Appends a key (objects only; a no-op on plain values).
    pub fn push(&mut self, key: impl Into<String>, value: impl Into<Ordered>) {
        if let Ordered::Object(items) = self {
            items.push((key.into(), value.into()));
        }
    }
}

impl From<Value> for Ordered {
    fn from(v: Value) -> Self {
        Ordered::Value(v)
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ordered::Value(v) => v.serialize(s),
            Ordered::Object(items) => {
                let mut m = s.serialize_map(Some(items.len()))?;
                for (k, v) in items {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// Kernel Tuner's marker for a failed configuration: `CompilationFailedConfig` for NVRTC errors,
/// `RuntimeFailedConfig` for anything that failed once compiled (a launch the device refused, a wrong answer,
/// a hang, a crash: Kernel Tuner has no marker of its own for the last three). None for a success.
pub fn marker(v: &Verdict) -> Option<&'static str> {
    match v {
        Verdict::Ok => None,
        Verdict::CompileError { .. } | Verdict::KernelNotFound { .. } => {
            Some("CompilationFailedConfig")
        }
        Verdict::Nondeterministic { .. }
        | Verdict::OutOfBounds { .. }
        | Verdict::TimedRunDiffers { .. }
        | Verdict::ImpossibleTime { .. }
        | Verdict::CarriesState { .. }
        | Verdict::Invalid { .. }
        | Verdict::WrongAnswer { .. }
        | Verdict::Timeout { .. }
        | Verdict::Crashed { .. } => Some("RuntimeFailedConfig"),
    }
}

/// A failure's reason in one line of at most 200 characters.
pub fn verdict_detail(v: &Verdict) -> String {
    let text = match v {
        Verdict::Ok => String::new(),
        Verdict::WrongAnswer { details, .. } => details.join("; "),
        Verdict::CompileError { log } => log.clone(),
        Verdict::Invalid { reason } | Verdict::Crashed { reason } => reason.clone(),
        Verdict::Timeout { after_s } => format!("no reply within {after_s:.1} s"),
        other @ (Verdict::KernelNotFound { .. }
        | Verdict::Nondeterministic { .. }
        | Verdict::OutOfBounds { .. }
        | Verdict::TimedRunDiffers { .. }
        | Verdict::ImpossibleTime { .. }
        | Verdict::CarriesState { .. }) => other.reason(),
    };
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.chars().take(200).collect()
}

/// The launches behind `time`: the stated test's samples (one launch each).
pub fn launches(m: &Measurement) -> Vec<f64> {
    match &m.timing {
        Some(t) if !t.samples_ms.is_empty() => t.samples_ms.clone(),
        _ => m.per_test_ms.first().copied().into_iter().collect(),
    }
}

/// Whether a measurement can be a Kernel Tuner success: verified, with finite launch times.
pub fn usable(m: &Measurement) -> bool {
    let l = launches(m);
    m.verdict.is_ok() && !l.is_empty() && l.iter().all(|t| t.is_finite() && *t > 0.0)
}

/// One cache entry: the parameters, then Kernel Tuner's fields, then kt's.
pub fn entry(m: &Measurement, timestamp: &str) -> Ordered {
    let mut e = Ordered::object();
    for (n, v) in &m.config.0 {
        e.push(n.clone(), json!(v));
    }
    let times = launches(m);
    if usable(m) {
        let time = times.iter().sum::<f64>() / times.len() as f64;
        e.push("time", json!(time));
        e.push("times", json!(times));
        push_timings(&mut e, m);
        // kt's rates come from the test's median; Kernel Tuner's from `time`
        let median = m.timing.as_ref().map(|t| t.median_ms);
        for (key, rate) in [("GB/s", m.gbps), ("GFLOP/s", m.gflops)] {
            if let (Some(r), Some(med)) = (rate, median) {
                e.push(key, json!(r * med / time));
            }
        }
        e.push("timestamp", json!(timestamp));
        if let Some(o) = m.objective {
            e.push("kt_objective_ms", json!(o));
        }
        e.push("kt_per_test_ms", json!(m.per_test_ms));
        e.push("kt_verdict", json!(m.verdict.short()));
        // a configuration that lost the race has fewer `times` than the policy's minimum: still a valid entry
        // (Kernel Tuner reads `time`; its `times` has no fixed length), and the evidence says why
        if let Some(race) = m.timing.as_ref().and_then(|t| t.race) {
            e.push("kt_aborted_early", json!(race));
        }
    } else {
        let failure = if m.verdict.is_ok() {
            Verdict::Invalid {
                reason: "verified, but no launch time was recorded".into(),
            }
        } else {
            m.verdict.clone()
        };
        e.push("__error__", json!(marker(&failure)));
        push_timings(&mut e, m);
        e.push("timestamp", json!(timestamp));
        e.push("kt_verdict", json!(failure.short()));
        e.push("kt_detail", json!(verdict_detail(&failure)));
    }
    e
}

fn push_timings(e: &mut Ordered, m: &Measurement) {
    e.push("compile_time", json!(m.compile_ms));
    // kt verifies inside its first timed launch: no separate verification time
    e.push("verification_time", json!(0));
    e.push("benchmark_time", json!(m.benchmark_ms));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::space::Config;

    fn cfg(x: i64) -> Config {
        Config::ints([("block_size_x", x)])
    }

    #[test]
    fn objects_keep_their_key_order() {
        let mut o = Ordered::object();
        o.push("zeta", json!(1));
        o.push("alpha", json!([1.5]));
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"zeta":1,"alpha":[1.5]}"#
        );
    }

    #[test]
    fn time_is_the_mean_of_one_tests_launches_and_the_objective_is_kts_own() {
        let mut m = Measurement::synthetic(cfg(64), Verdict::Ok, Some(2.0));
        m.timing = crate::check::measure::TimingStats::from_samples(&[1.0, 2.0, 6.0]);
        m.per_test_ms = vec![2.0, 3.0];
        m.objective = Some(5.0);
        m.gflops = Some(100.0);
        let v = serde_json::to_value(entry(&m, "t")).unwrap();
        assert_eq!(v["time"], json!(3.0));
        assert_eq!(v["times"], json!([1.0, 2.0, 6.0]));
        assert_eq!(v["kt_objective_ms"], json!(5.0));
        // 100 GFLOP/s at the 2 ms median is 66.7 at the 3 ms mean
        assert!((v["GFLOP/s"].as_f64().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        let text = serde_json::to_string(&entry(&m, "t")).unwrap();
        assert!(
            text.starts_with(r#"{"block_size_x":64,"time":3.0,"times""#),
            "{text}"
        );
    }

    #[test]
    fn a_configuration_that_lost_the_race_is_a_valid_entry_with_its_evidence() {
        let policy = crate::check::measure::TimingPolicy::default();
        let best = Some(crate::check::measure::Baseline {
            ms: 1.0,
            noise: Some(0.01),
        });
        let (stats, _) = crate::check::sampling::take_samples::<()>(
            &policy,
            best,
            Some(crate::check::sampling::FirstSample(2.0)),
            None,
            &mut |_| Ok(2.0),
        )
        .unwrap();
        let mut m = Measurement::synthetic(cfg(8), Verdict::Ok, Some(2.0));
        m.timing = Some(stats);
        assert!(usable(&m));
        let v = serde_json::to_value(entry(&m, "t")).unwrap();
        assert_eq!(v["time"], json!(2.0));
        assert_eq!(v["times"], json!([2.0]));
        assert_eq!(v["kt_aborted_early"]["samples"], json!(1));
        assert_eq!(v["kt_aborted_early"]["best_ms"], json!(1.0));
        assert!((v["kt_aborted_early"]["bound_ms"].as_f64().unwrap() - 1.15).abs() < 1e-9);
        // a contender has no such key
        let contender = Measurement::synthetic(cfg(16), Verdict::Ok, Some(1.0));
        assert!(
            serde_json::to_value(entry(&contender, "t"))
                .unwrap()
                .get("kt_aborted_early")
                .is_none()
        );
    }

    #[test]
    fn failures_carry_kernel_tuners_markers_and_kts_reason() {
        let wrong = Verdict::WrongAnswer {
            details: vec!["test t0: C differs at 3 of 9".into()],
            reports: vec![],
        };
        let m = Measurement::synthetic(cfg(32), wrong, None);
        let v = serde_json::to_value(entry(&m, "t")).unwrap();
        assert_eq!(v["__error__"], "RuntimeFailedConfig");
        assert_eq!(v["kt_verdict"], "wrong answer");
        assert_eq!(v["kt_detail"], "test t0: C differs at 3 of 9");
        assert!(v.get("time").is_none());
        let c = Measurement::synthetic(
            cfg(16),
            Verdict::CompileError {
                log: "\nerror: x\nmore".into(),
            },
            None,
        );
        let v = serde_json::to_value(entry(&c, "t")).unwrap();
        assert_eq!(v["__error__"], "CompilationFailedConfig");
        assert_eq!(v["kt_detail"], "error: x");
    }
}
