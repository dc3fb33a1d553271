//! Reading a Kernel Tuner cache file back (`kt tune --kt-cache FILE`): the results of an earlier tuning, by
//! Kernel Tuner or by kt's export, become measurements kt reuses instead of running those configurations
//! again, when they were measured on a GPU of the same name, for the same kernel, parameters and problem size.
//! Kernel Tuner's files may be unclosed (a run it did not finish): they are read as its own reader reads them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::check::measure::TimingStats;
use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::outcome::{Measurement, Verdict};
use crate::model::param_value::ParamValue;
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;

/// A Kernel Tuner cache file, read.
#[derive(Debug, Clone)]
pub struct KernelTunerCache {
    pub path: PathBuf,
    pub device_name: String,
    pub kernel_name: String,
    /// As written: integers, or strings for problem sizes Kernel Tuner evaluates per configuration.
    pub problem_size: Vec<Value>,
    pub tune_params_keys: Vec<String>,
    /// The test ids kt's export names (`kt_tests`); empty for Kernel Tuner's own files.
    pub kt_tests: Vec<String>,
    entries: Vec<Map<String, Value>>,
}

const MARKERS: [&str; 4] = [
    "InvalidConfig",
    "CompilationFailedConfig",
    "RuntimeFailedConfig",
    "ErrorConfig",
];

/// The text Kernel Tuner's reader would parse: an unclosed file (its state while tuning, or after a crash)
/// gets its trailing comma dropped and its two closing braces added.
/// A parameter's value in a Kernel Tuner cache entry (a number, boolean or string, as json.dump wrote it).
fn param_value(v: &Value) -> Option<ParamValue> {
    serde_json::from_value(v.clone()).ok()
}

fn closed(text: &str) -> String {
    let t = text.trim();
    if t.is_empty() || t.ends_with("}\n}") || t.ends_with("}}}") || t.ends_with('}') {
        return t.to_string();
    }
    let t = t.strip_suffix(',').unwrap_or(t);
    format!("{t}}}\n}}")
}

impl KernelTunerCache {
    pub fn read(path: &Path) -> Result<Self, TunerError> {
        let bad = |message: String| TunerError::KernelTuner {
            path: path.to_path_buf(),
            message,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        let doc: Value = serde_json::from_str(&closed(&text))
            .map_err(|e| bad(format!("not a Kernel Tuner cache file (JSON: {e})")))?;
        let field = |k: &str| {
            doc.get(k)
                .ok_or_else(|| bad(format!("no `{k}`: not a Kernel Tuner cache file")))
        };
        let string = |k: &str| -> Result<String, TunerError> {
            field(k)?
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(format!("`{k}` is not a string")))
        };
        let problem_size = match field("problem_size")? {
            Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        };
        let tune_params_keys = field("tune_params_keys")?
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .ok_or_else(|| bad("`tune_params_keys` is not a list".into()))?;
        let entries = field("cache")?
            .as_object()
            .ok_or_else(|| bad("`cache` is not an object".into()))?
            .values()
            .filter_map(|v| v.as_object().cloned())
            .collect();
        let kt_tests = doc
            .get("kt_tests")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(KernelTunerCache {
            path: path.to_path_buf(),
            device_name: string("device_name")?,
            kernel_name: string("kernel_name")?,
            problem_size,
            tune_params_keys,
            kt_tests,
            entries,
        })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn mismatch(&self, message: String) -> TunerError {
        TunerError::KernelTuner {
            path: self.path.clone(),
            message,
        }
    }

    /// Checks that the file's results are this run's: the same kernel, the same tunable parameters, the
    /// same problem size as the run's first test, and times that mean what this run's objective means.
    pub fn check(&self, kernel: &TunableKernel, tests: &[KernelTest]) -> Result<(), TunerError> {
        if self.kernel_name != kernel.kernel_name {
            return Err(self.mismatch(format!(
                "holds results for kernel `{}`, this run tunes `{}`",
                self.kernel_name, kernel.kernel_name
            )));
        }
        let mut theirs = self.tune_params_keys.clone();
        let mut ours: Vec<String> = kernel.params.iter().map(|p| p.name.clone()).collect();
        theirs.sort();
        ours.sort();
        if theirs != ours {
            return Err(self.mismatch(format!(
                "was tuned over the parameters {:?}, this run over {:?}: give the same --param names",
                self.tune_params_keys, ours
            )));
        }
        let test = tests
            .first()
            .ok_or_else(|| self.mismatch("no tests to compare its problem size with".into()))?;
        let ours = super::script_problem_size(kernel, test)?;
        let same = self.problem_size.len() == ours.len()
            && self.problem_size.iter().zip(&ours).all(|(t, o)| match t {
                Value::Number(n) => n.to_string() == *o,
                Value::String(s) => s.replace(' ', "") == o.replace(' ', ""),
                _ => false,
            });
        if !same {
            return Err(self.mismatch(format!(
                "was measured at problem size {}, this run's test `{}` has [{}]: tune at the same size (--size, --test-size)",
                Value::Array(self.problem_size.clone()),
                test.id,
                ours.join(", ")
            )));
        }
        let ids: Vec<&str> = tests.iter().map(|t| t.id.as_str()).collect();
        if tests.len() > 1 && self.kt_tests != ids {
            return Err(self.mismatch(format!(
                "holds one launch of one test per configuration, while this run's objective sums {} tests: tune with one test (--tests-count 1) to reuse it",
                tests.len()
            )));
        }
        Ok(())
    }

    /// The results, as measurements over `kernel`'s parameters, when the file was measured on `device_name`;
    /// None for another GPU (nothing is reused then).
    pub fn measurements_for(
        &self,
        kernel: &TunableKernel,
        device_name: &str,
    ) -> Option<HashMap<Config, Measurement>> {
        if self.device_name != device_name {
            return None;
        }
        Some(
            self.entries
                .iter()
                .filter_map(|e| self.measurement(kernel, e))
                .map(|m| (m.config.clone(), m))
                .collect(),
        )
    }

    fn measurement(&self, kernel: &TunableKernel, e: &Map<String, Value>) -> Option<Measurement> {
        let config = Config(
            kernel
                .params
                .iter()
                .map(|p| Some((p.name.clone(), param_value(e.get(&p.name)?)?)))
                .collect::<Option<_>>()?,
        );
        let number = |k: &str| e.get(k).and_then(Value::as_f64);
        let marker = e
            .values()
            .filter_map(Value::as_str)
            .find(|s| MARKERS.contains(s));
        let detail = e
            .get("kt_detail")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let said = |what: &str| {
            if detail.is_empty() {
                format!("Kernel Tuner: {what}")
            } else {
                format!("{what}: {detail}")
            }
        };
        let verdict = match (e.get("kt_verdict").and_then(Value::as_str), marker) {
            (Some("wrong answer"), _) => Verdict::WrongAnswer {
                details: vec![said("wrong answer")],
                reports: vec![],
            },
            (Some("timeout"), _) => Verdict::Timeout { after_s: 0.0 },
            (Some("crashed"), _) => Verdict::Crashed {
                reason: said("crashed"),
            },
            (_, Some("CompilationFailedConfig")) => Verdict::CompileError {
                log: said("CompilationFailedConfig"),
            },
            (_, Some(m)) => Verdict::Invalid { reason: said(m) },
            (_, None) if number("time").is_some() => Verdict::Ok,
            (_, None) => return None,
        };
        let mut m = Measurement::synthetic(config, verdict, None);
        m.timing = None;
        m.from_cache = true;
        m.compile_ms = number("compile_time").unwrap_or(0.0);
        m.benchmark_ms = number("benchmark_time").unwrap_or(0.0);
        if m.verdict.is_ok() {
            let mut times: Vec<f64> = e
                .get("times")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            if times.is_empty() {
                times = number("time").into_iter().collect();
            }
            let stats = TimingStats::from_samples(&times)?;
            // kt's objective of a one-test run is that test's median launch; kt's own export states its own
            let per_test: Vec<f64> = e
                .get("kt_per_test_ms")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .filter(|v: &Vec<f64>| !v.is_empty())
                .unwrap_or_else(|| vec![stats.median_ms]);
            m.objective = Some(number("kt_objective_ms").unwrap_or(per_test.iter().sum()));
            m.per_test_ms = per_test;
            m.gbps = number("GB/s");
            m.gflops = number("GFLOP/s");
            m.timing = Some(stats);
        }
        Some(m)
    }
}

/// The hook of the tuning loop (`TuneOptions::kernel_tuner_cache`): the results of the Kernel Tuner cache at
/// `path` that this run can reuse: none when it was measured on another GPU (said in the log), an error
/// when it is not this run's kernel, parameters or problem size.
pub fn reusable(
    path: Option<&Path>,
    kernel: &TunableKernel,
    tests: &[KernelTest],
    device_name: &str,
) -> Result<Vec<Measurement>, TunerError> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let cache = KernelTunerCache::read(path)?;
    cache.check(kernel, tests)?;
    match cache.measurements_for(kernel, device_name) {
        Some(m) => Ok(m.into_values().collect()),
        None => {
            tracing::warn!(
                "{}: measured on {}, this GPU is {device_name}: nothing reused",
                path.display(),
                cache.device_name
            );
            Ok(Vec::new())
        }
    }
}
