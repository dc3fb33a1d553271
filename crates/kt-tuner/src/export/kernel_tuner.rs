//! Kernel Tuner 1.5's cache file and a Python script that tunes the same space, written into one directory
//! with the kernel source and the test's arrays (see the folder's `mod.rs`).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::TunerError;
use crate::model::args::{ArraySource, KernelTest, TestArg, TestSet};
use crate::model::geometry;
use crate::model::outcome::{Measurement, TuneResult};
use crate::model::param_value::ParamValue;
use crate::model::space::{Config, Restriction, SearchSpace};
use crate::model::tunable_kernel::TunableKernel;

use super::cache_file::{self, Ordered, verdict_detail};
use super::cmem::{CmemArg, cmem_args};
use super::python::{self, config_set, mentions, translate};
use super::script::{self, RestrictionLine, ScriptSpec};

/// A configuration kt saw fail, with its verdict: what best.cu's header and the export exclude.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedConfig {
    pub config: Config,
    /// `wrong answer`, `compile error`, `invalid`, `timeout` or `crashed`.
    pub verdict: &'static str,
    /// The first line of the reason.
    pub detail: String,
}

/// Every configuration of the run that failed (compile error, invalid launch, wrong answer, hang, crash), in
/// the order measured.
pub fn failed_configurations(result: &TuneResult) -> Vec<FailedConfig> {
    let mut out: Vec<FailedConfig> = Vec::new();
    for m in &result.measurements {
        if m.verdict.is_ok() || out.iter().any(|f| f.config == m.config) {
            continue;
        }
        out.push(FailedConfig {
            config: m.config.clone(),
            verdict: m.verdict.short(),
            detail: verdict_detail(&m.verdict),
        });
    }
    out
}

/// What a time of kt's is: one launch of one test, or the objective over several.
pub fn objective_basis(tests: &TestSet) -> String {
    match tests.tests.as_slice() {
        [one] => format!(
            "the median of the launches of test `{}` (ms), one launch",
            one.id
        ),
        many => format!(
            "the sum over {} tests ({}) of each test's median launch time (ms)",
            many.len(),
            many.iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Names an expression may use besides the parameters: the test's scalars and kt's block-size defaults.
fn constants(test: &KernelTest) -> crate::model::expr::Bindings {
    geometry::bindings(&Config(vec![]), &test.scalars())
}

/// Problem size per dimension as the exported script passes it (as many dimensions as kt's geometry has):
/// the test's integer, or a Python expression when it depends on the parameters.
pub fn script_problem_size(
    kernel: &TunableKernel,
    test: &KernelTest,
) -> Result<Vec<String>, TunerError> {
    let names: Vec<String> = kernel.params.iter().map(|p| p.name.clone()).collect();
    let constants = constants(test);
    kernel
        .geometry
        .problem_size
        .iter()
        .map(|e| {
            if mentions(e, &names) {
                translate(e, &names, &constants).map_err(|m| TunerError::Expression {
                    expr: e.clone(),
                    message: m,
                })
            } else {
                crate::model::expr::eval_count(e, &constants).map(|v| v.to_string())
            }
        })
        .collect()
}

/// One export: a tuning result with the kernel and tests it came from.
pub struct KernelTunerExport<'a> {
    kernel: &'a TunableKernel,
    tests: &'a TestSet,
    result: &'a TuneResult,
    timestamp: String,
}

/// The space as the export sees it: kt's configurations, the measurement of each (last one wins), the ones
/// that failed and the ones never measured.
struct SpaceView<'a> {
    names: Vec<String>,
    space: SearchSpace,
    measured: Vec<&'a Measurement>,
    failed: Vec<Vec<ParamValue>>,
    unmeasured: usize,
}

/// Kernel Tuner's timestamp format: `2026-11-22 10:11:12.123456+00:00`.
fn now_timestamp() -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day] [hour]:[minute]:[second].[subsecond digits:6]+00:00"
    );
    time::OffsetDateTime::now_utc()
        .format(&format)
        .unwrap_or_default()
}

fn io_error(path: &Path, e: std::io::Error) -> TunerError {
    TunerError::KernelTuner {
        path: path.to_path_buf(),
        message: format!("cannot write it: {e}"),
    }
}

impl<'a> KernelTunerExport<'a> {
    /// The stated test, whose launches are `times`, is the first of `tests` (the one kt's measurements
    /// keep samples of).
    pub fn new(
        kernel: &'a TunableKernel,
        tests: &'a TestSet,
        result: &'a TuneResult,
    ) -> Result<Self, TunerError> {
        if tests.tests.is_empty() {
            return Err(TunerError::Arguments(
                "the Kernel Tuner export needs the run's tests; none were given".into(),
            ));
        }
        Ok(KernelTunerExport {
            kernel,
            tests,
            result,
            timestamp: now_timestamp(),
        })
    }

    fn test(&self) -> &KernelTest {
        &self.tests.tests[0]
    }

    pub fn cache_file_name(&self) -> String {
        format!("{}_cache.json", self.kernel.kernel_name)
    }

    pub fn script_file_name(&self) -> String {
        format!("tune_{}.py", self.kernel.kernel_name)
    }

    pub fn source_file_name(&self) -> String {
        format!("{}_kt.cu", self.kernel.kernel_name)
    }

    fn param_names(&self) -> Vec<String> {
        self.kernel.params.iter().map(|p| p.name.clone()).collect()
    }

    /// The values of `config` in parameter order, when it sets every parameter.
    fn values(&self, config: &Config) -> Option<Vec<ParamValue>> {
        self.kernel
            .params
            .iter()
            .map(|p| config.value(&p.name).cloned())
            .collect()
    }

    fn constants(&self) -> crate::model::expr::Bindings {
        constants(self.test())
    }

    fn space(&self) -> Result<SpaceView<'a>, TunerError> {
        let space = SearchSpace::build_for_blocks(
            &self.kernel.params,
            &self.kernel.restrictions,
            &self.test().scalars(),
            Some(self.result.device.max_threads_per_block as u64),
            &self.kernel.geometry.block_names,
        )?;
        let mut measured: Vec<&'a Measurement> = Vec::new();
        for m in &self.result.measurements {
            if self.values(&m.config).is_none() {
                continue;
            }
            match measured.iter_mut().find(|x| x.config == m.config) {
                Some(slot) => *slot = m,
                None => measured.push(m),
            }
        }
        let failed = failed_configurations(self.result)
            .iter()
            .filter_map(|f| self.values(&f.config))
            .collect();
        let unmeasured = space
            .configs
            .iter()
            .filter(|c| !measured.iter().any(|m| &m.config == *c))
            .count();
        Ok(SpaceView {
            names: self.param_names(),
            space,
            measured,
            failed,
            unmeasured,
        })
    }

    fn problem_size(&self) -> Result<Vec<String>, TunerError> {
        script_problem_size(self.kernel, self.test())
    }

    fn kt_best(&self) -> Option<Vec<(String, ParamValue)>> {
        let b = self.result.best.as_ref()?;
        let values = self.values(&b.config)?;
        Some(self.param_names().into_iter().zip(values).collect())
    }

    /// Kernel Tuner's cache file (JSON text, `"cache"` last).
    pub fn cache_json(&self) -> Result<String, TunerError> {
        let view = self.space()?;
        let mut doc = Ordered::object();
        doc.push("device_name", json!(self.result.device.name));
        doc.push("kernel_name", json!(self.kernel.kernel_name));
        let problem: Vec<serde_json::Value> = self
            .problem_size()?
            .into_iter()
            .map(|p| p.parse::<u64>().map(|v| json!(v)).unwrap_or(json!(p)))
            .collect();
        doc.push("problem_size", json!(problem));
        doc.push("tune_params_keys", json!(view.names));
        let mut tune_params = Ordered::object();
        for p in &self.kernel.params {
            tune_params.push(p.name.clone(), json!(p.values));
        }
        doc.push("tune_params", tune_params);
        doc.push("objective", json!("time"));
        doc.push(
            "kt_exported_by",
            json!(format!("kt {}", env!("CARGO_PKG_VERSION"))),
        );
        doc.push("kt_time_basis", json!(self.time_basis()));
        doc.push("kt_time_test", json!(self.test().id));
        doc.push("kt_objective_basis", json!(objective_basis(self.tests)));
        doc.push(
            "kt_tests",
            json!(
                self.tests
                    .tests
                    .iter()
                    .map(|t| t.id.clone())
                    .collect::<Vec<_>>()
            ),
        );
        let mut best = Ordered::object();
        for (n, v) in self.kt_best().unwrap_or_default() {
            best.push(n, json!(v));
        }
        doc.push(
            "kt_best",
            if self.result.best.is_some() {
                best
            } else {
                json!(null).into()
            },
        );
        doc.push("kt_space_size", json!(view.space.len()));
        doc.push("kt_measured", json!(view.space.len() - view.unmeasured));
        let mut cache = Ordered::object();
        for m in &view.measured {
            cache.push(m.config.kt_key(), cache_file::entry(m, &self.timestamp));
        }
        doc.push("cache", cache);
        serde_json::to_string_pretty(&doc).map_err(|e| TunerError::Arguments(e.to_string()))
    }

    fn time_basis(&self) -> String {
        format!(
            "`time` is the mean of the launches in `times`, one launch each, of test `{}` (ms)",
            self.test().id
        )
    }

    /// kt's restrictions in Python, the device's thread limit, and the failed configurations excluded.
    fn restrictions(&self, view: &SpaceView) -> Vec<RestrictionLine> {
        let constants = self.constants();
        let mut lines = Vec::new();
        let mut untranslated = Vec::new();
        for r in &self.kernel.restrictions {
            match r {
                Restriction::Expr(e) => match translate(e, &view.names, &constants) {
                    Ok(python) => lines.push(RestrictionLine {
                        comment: format!("kt: {e}"),
                        python,
                    }),
                    Err(why) => untranslated.push(format!("`{e}` ({why})")),
                },
                Restriction::Closure(_) => untranslated.push("a Rust predicate".into()),
            }
        }
        if !untranslated.is_empty() {
            let all: Vec<Vec<ParamValue>> = view
                .space
                .configs
                .iter()
                .filter_map(|c| self.values(c))
                .collect();
            let (lhs, set) = config_set(&view.names, &all);
            lines.push(RestrictionLine {
                comment: format!(
                    "kt's space, as the configurations it holds: {} cannot be written in Python",
                    untranslated.join(", ")
                ),
                python: format!("{lhs} in {set}"),
            });
        }
        let blocks: Vec<&str> = (self.kernel.geometry.block_names.iter())
            .filter(|b| view.names.iter().any(|n| n == b))
            .collect();
        if !blocks.is_empty() {
            lines.push(RestrictionLine {
                comment: format!(
                    "the device's limit on threads per block ({})",
                    self.result.device.name
                ),
                python: format!(
                    "{} <= {}",
                    blocks.join(" * "),
                    self.result.device.max_threads_per_block
                ),
            });
        }
        if !view.failed.is_empty() {
            let (lhs, set) = config_set(&view.names, &view.failed);
            let failed = failed_configurations(self.result);
            let mut kinds: Vec<&str> = failed.iter().map(|f| f.verdict).collect();
            kinds.sort();
            kinds.dedup();
            lines.push(RestrictionLine {
                comment: format!(
                    "{} configuration(s) kt saw fail ({}): never selected",
                    view.failed.len(),
                    kinds.join(", ")
                ),
                python: format!("{lhs} not in {set}"),
            });
        }
        lines
    }

    fn simulate_only(&self, view: &SpaceView) -> Option<RestrictionLine> {
        if view.unmeasured == 0 {
            return None;
        }
        let measured: Vec<Vec<ParamValue>> = view
            .measured
            .iter()
            .filter_map(|m| self.values(&m.config))
            .collect();
        let (lhs, set) = config_set(&view.names, &measured);
        Some(RestrictionLine {
            comment: format!(
                "kt's {:?} search measured {} of the {} configurations; simulation needs each one it visits",
                self.result.strategy,
                view.space.len() - view.unmeasured,
                view.space.len()
            ),
            python: format!("{lhs} in {set}"),
        })
    }

    /// File name beside the script for an array read from a file.
    fn array_file(&self, name: &str) -> String {
        let safe: String = format!("{}_{name}", self.test().id)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{safe}.npy")
    }

    /// The stated test's `__constant__` contents as Kernel Tuner's `cmem_args`.
    fn cmem(&self) -> Result<Vec<CmemArg>, TunerError> {
        cmem_args(self.test(), &self.kernel.source, |name| {
            self.array_file(&format!("cmem_{name}"))
        })
    }

    fn npy_arrays(&self) -> Vec<(String, PathBuf)> {
        self.test()
            .args
            .iter()
            .filter_map(|a| match a {
                TestArg::Array(x) => match &x.source {
                    ArraySource::Npy { path, .. } => Some((x.name.clone(), path.clone())),
                    ArraySource::Generate { .. } => None,
                },
                TestArg::Scalar(_) => None,
            })
            .collect()
    }

    /// The script's text, for `script_name` beside the cache, the source and the arrays.
    pub fn script(&self, script_name: &str) -> Result<String, TunerError> {
        let view = self.space()?;
        let names = self.param_names();
        let constants = self.constants();
        let tr = |e: &String| {
            translate(e, &names, &constants).map_err(|m| TunerError::Expression {
                expr: e.clone(),
                message: m,
            })
        };
        let mut grid_div: [Vec<String>; 3] = Default::default();
        for (d, divs) in self.kernel.geometry.grid_div.iter().enumerate() {
            grid_div[d] = divs.iter().map(tr).collect::<Result<_, _>>()?;
        }
        let kt_best = match self.kt_best() {
            Some(b) => format!(
                "{{{}}}",
                b.iter()
                    .map(|(n, v)| format!("{}: {v}", python::py_str(n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "None".into(),
        };
        let spec = ScriptSpec {
            kernel_name: self.kernel.kernel_name.clone(),
            kt_version: env!("CARGO_PKG_VERSION").into(),
            device_name: self.result.device.name.clone(),
            source_file: self.source_file_name(),
            cache_file: self.cache_file_name(),
            script_file: script_name.to_string(),
            params: self
                .kernel
                .params
                .iter()
                .map(|p| (p.name.clone(), p.values.clone()))
                .collect(),
            restrictions: self.restrictions(&view),
            simulate_only: self.simulate_only(&view),
            problem_size: self.problem_size()?,
            grid_div,
            shared_mem: self
                .kernel
                .geometry
                .shared_mem
                .as_ref()
                .map(tr)
                .transpose()?,
            compiler_options: self.kernel.compiler_options.clone(),
            array_files: self
                .npy_arrays()
                .into_iter()
                .map(|(n, _)| {
                    let f = self.array_file(&n);
                    (n, f)
                })
                .collect(),
            cmem_args: self
                .cmem()?
                .into_iter()
                .map(|c| (c.name, c.python))
                .collect(),
            time_basis: self.time_basis(),
            objective_basis: format!(
                "`kt_objective_ms` in the cache, {}",
                objective_basis(self.tests)
            ),
            kt_best,
        };
        Ok(script::render(&spec, self.test()))
    }

    /// Writes the cache, the script (`script_name`, default `tune_<kernel>.py`), the kernel source and the
    /// stated test's .npy arrays and constants (hard links where possible) into `dir`. Returns the files written.
    pub fn write(&self, dir: &Path, script_name: Option<&str>) -> Result<Vec<PathBuf>, TunerError> {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        let script_name = script_name
            .map(str::to_string)
            .unwrap_or_else(|| self.script_file_name());
        let mut written = Vec::new();
        let mut put = |name: &str, text: &str| -> Result<(), TunerError> {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| io_error(&path, e))?;
            written.push(path);
            Ok(())
        };
        put(&self.cache_file_name(), &self.cache_json()?)?;
        put(&script_name, &self.script(&script_name)?)?;
        put(&self.source_file_name(), &self.kernel.source)?;
        let arrays = self
            .npy_arrays()
            .into_iter()
            .map(|(name, from)| (from, self.array_file(&name)));
        let constants = self.cmem()?.into_iter().filter_map(|c| c.file);
        for (from, name) in arrays.chain(constants) {
            let to = dir.join(name);
            let _ = std::fs::remove_file(&to);
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).map_err(|e| io_error(&from, e))?;
            }
            written.push(to);
        }
        Ok(written)
    }
}

#[cfg(test)]
#[path = "kernel_tuner_tests.rs"]
mod tests;
