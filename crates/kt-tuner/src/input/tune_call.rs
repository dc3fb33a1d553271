//! A tuning request in Kernel Tuner's terms, as plain data: what kt's Python module (`kt.tune_kernel`) sends
//! once it has saved the caller's numpy arrays as `.npy` files. It becomes the kernel, tests and options kt
//! tunes with, keeping Kernel Tuner's meaning: the source is compiled as given with the parameters as
//! `#define`s, the arguments are passed in order, outputs are checked only against a given `answer`.
//!
//! It deliberately knows nothing of Python: callable restrictions are added by the caller as closures, and
//! the result goes back as kt's own `TuneResult` for the caller to shape.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::check::verify::Tolerance;
use crate::error::TunerError;
use crate::model::args::{ArrayArg, ArraySource, KernelTest, ScalarArg, TestArg, TestSet};
use crate::model::block_names::BlockNames;
use crate::model::constants::ConstantArg;
use crate::model::param_value::ParamValue;
use crate::model::space::{Restriction, TunableParam};
use crate::search::{Limits, Strategy};
use crate::session::setup::{TunableKernel, TuneOptions};
use kt_record::DType;
use kt_record::tests_format::npy::read_header;

/// One kernel argument, in the kernel's parameter order.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CallArg {
    /// A numpy array saved to `path`; `answer` is the expected contents after a launch (Kernel Tuner's
    /// `answer` list entry), when given.
    Array {
        dtype: String,
        path: PathBuf,
        #[serde(default)]
        answer: Option<PathBuf>,
    },
    /// A numpy scalar: its value and its bytes as the kernel receives them.
    Scalar {
        dtype: String,
        value: f64,
        bytes: Vec<u8>,
    },
}

/// One entry of Kernel Tuner's `cmem_args`: a `__constant__` symbol and the numpy array saved for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallConstant {
    pub name: String,
    pub dtype: String,
    pub path: PathBuf,
}

/// `tune_kernel`'s arguments that kt supports, in its own words.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneCall {
    pub kernel_name: String,
    /// The CUDA source text (a file's contents when a path was given).
    pub kernel_source: String,
    /// Per dimension, x first: numbers or expressions over parameter names.
    pub problem_size: Vec<String>,
    pub arguments: Vec<CallArg>,
    /// Kernel Tuner's `cmem_args`: written into each configuration's module before its launches.
    #[serde(default)]
    pub constants: Vec<CallConstant>,
    /// Parameters in the caller's order, each with its values.
    pub tune_params: Vec<(String, Vec<ParamValue>)>,
    #[serde(default)]
    pub restrictions: Vec<String>,
    /// grid_div_x, grid_div_y, grid_div_z; None keeps Kernel Tuner's default (the block-size parameter).
    #[serde(default)]
    pub grid_div: [Option<Vec<String>>; 3],
    /// The parameters that set the block, x first (Kernel Tuner's `block_size_names`); None or fewer than
    /// three: `block_size_x/y/z` for the dimensions not named.
    #[serde(default)]
    pub block_size_names: Option<Vec<String>>,
    #[serde(default)]
    pub atol: Option<f64>,
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub max_fevals: Option<usize>,
    /// Seconds.
    #[serde(default)]
    pub time_limit: Option<f64>,
    #[serde(default)]
    pub iterations: Option<u32>,
    #[serde(default)]
    pub compiler_options: Vec<String>,
    /// A Kernel Tuner cache file whose results measured on this GPU are reused.
    #[serde(default)]
    pub cache: Option<PathBuf>,
    #[serde(default)]
    pub seed: Option<u64>,
}

/// Kernel Tuner's default `atol`; its check is numpy's `allclose`, whose `rtol` is 1e-5.
const KERNEL_TUNER_ATOL: f64 = 1e-6;
const NUMPY_RTOL: f64 = 1e-5;

impl TuneCall {
    /// Reads the request as JSON text.
    pub fn from_json(text: &str) -> Result<Self, TunerError> {
        serde_json::from_str(text).map_err(|e| {
            TunerError::Arguments(format!(
                "kt's Python module sent a request kt cannot read: {e}"
            ))
        })
    }

    /// The kernel to tune, with its space, restrictions and launch geometry.
    pub fn kernel(&self) -> Result<TunableKernel, TunerError> {
        let mut kernel = TunableKernel::new(
            self.kernel_source.clone(),
            self.kernel_name.clone(),
            self.problem_size.clone(),
        );
        let blocks = BlockNames::new(self.block_size_names.as_deref().unwrap_or_default())?;
        for (name, values) in &self.tune_params {
            let param = TunableParam::new(name.clone(), values.iter().cloned());
            param.check_block_size(&blocks.0)?;
            kernel.params.push(param);
        }
        kernel.restrictions = self
            .restrictions
            .iter()
            .cloned()
            .map(Restriction::Expr)
            .collect();
        kernel.geometry.set_block_names(blocks);
        for (d, div) in self.grid_div.iter().enumerate() {
            if let Some(div) = div {
                kernel.geometry.grid_div[d] = div.clone();
            }
        }
        kernel.compiler_options = self.compiler_options.clone();
        Ok(kernel)
    }

    /// The one test: the caller's arguments in order, named after the kernel's parameters when kt can read
    /// its signature (for messages), else `arg0`, `arg1`, ….
    pub fn tests(&self) -> Result<TestSet, TunerError> {
        let names = self.argument_names();
        let tolerance = Tolerance {
            rtol: NUMPY_RTOL,
            atol: self.atol.unwrap_or(KERNEL_TUNER_ATOL),
            ..Tolerance::default()
        };
        let mut test = KernelTest {
            id: "arguments".into(),
            args: Vec::new(),
            tolerances: Default::default(),
            constants: self.constant_args()?,
        };
        // Without any answer, Kernel Tuner checks nothing and lets the kernel write any array. kt then
        // takes every array the kernel may write (a pointer not `const`, or any where the signature is
        // unknown) as an output without expected values: the reference's own launches set them, nothing
        // compares a configuration with them, and no launch is refused for "modifying an input" it owns.
        let may_write = self.pointers_it_may_write();
        for (i, arg) in self.arguments.iter().enumerate() {
            let name = names.get(i).cloned().unwrap_or_else(|| format!("arg{i}"));
            let mut test_arg = call_arg(&name, arg)?;
            if let TestArg::Array(a) = &mut test_arg
                && !self.has_answer()
                && may_write.get(i).copied().unwrap_or(true)
            {
                a.is_output = true;
            }
            test.args.push(test_arg);
            if matches!(
                arg,
                CallArg::Array {
                    answer: Some(_),
                    ..
                }
            ) {
                test.tolerances.insert(name, tolerance);
            }
        }
        Ok(TestSet { tests: vec![test] })
    }

    /// How to tune: the strategy by Kernel Tuner's name, its limits, at least `iterations` samples.
    pub fn options(&self) -> Result<TuneOptions, TunerError> {
        let name = self.strategy.as_deref().unwrap_or("brute_force");
        let strategy = Strategy::parse(name).ok_or_else(|| {
            TunerError::Arguments(format!(
                "strategy `{name}` is not one kt has; use brute_force, random_sample, greedy_ils, simulated_annealing or genetic_algorithm"
            ))
        })?;
        let mut options = TuneOptions {
            strategy,
            limits: Limits {
                max_evals: self.max_fevals,
                time_limit: self.time_limit.map(Duration::from_secs_f64),
            },
            seed: self.seed.unwrap_or(1),
            // Kernel Tuner verifies only against an answer; without one there is nothing to check
            verify: self.has_answer(),
            kernel_tuner_cache: self.cache.clone().filter(|p| p.exists()),
            ..TuneOptions::default()
        };
        if let Some(n) = self.iterations {
            options.timing.min_reps = n.max(1);
            options.timing.max_reps = options.timing.max_reps.max(n);
        }
        Ok(options)
    }

    pub fn has_answer(&self) -> bool {
        self.arguments.iter().any(|a| {
            matches!(
                a,
                CallArg::Array {
                    answer: Some(_),
                    ..
                }
            )
        })
    }

    /// `cmem_args` as the test's constants. A name the source declares no `__constant__` symbol for is
    /// refused (Kernel Tuner fails looking it up in the module); a source kt cannot parse is left to the
    /// module, where a missing symbol is skipped.
    fn constant_args(&self) -> Result<Vec<ConstantArg>, TunerError> {
        let declared: Option<Vec<String>> = kt_cuda::parse(&self.kernel_source)
            .ok()
            .map(|p| p.constant_symbols.into_iter().map(|c| c.name).collect());
        let mut out = Vec::new();
        for c in &self.constants {
            if let Some(names) = &declared
                && !names.contains(&c.name)
            {
                return Err(TunerError::Arguments(format!(
                    "cmem_args names `{}`, which the source does not declare `__constant__` (it declares: {})",
                    c.name,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            }
            let info = read_header(&c.path)?;
            out.push(ConstantArg {
                name: c.name.clone(),
                dtype: dtype(&c.dtype, &c.name)?,
                elements: Some(info.elements()),
                source: ArraySource::Npy {
                    path: c.path.clone(),
                    offset: info.data_offset,
                },
            });
        }
        Ok(out)
    }

    /// For each argument, whether the kernel may write through it (a pointer not `const`); empty where kt
    /// cannot read the kernel's signature or it has another number of parameters.
    fn pointers_it_may_write(&self) -> Vec<bool> {
        self.each_parameter(|p| p.is_pointer() && !p.is_const)
    }

    fn argument_names(&self) -> Vec<String> {
        self.each_parameter(|p| p.name.clone())
    }

    /// `f` of each of the kernel's parameters, in order, when kt can read a signature with one parameter per
    /// argument; else empty.
    fn each_parameter<T>(&self, f: impl Fn(&kt_cuda::KernelParam) -> T) -> Vec<T> {
        let Ok(parsed) = kt_cuda::parse(&self.kernel_source) else {
            return Vec::new();
        };
        parsed
            .kernels()
            .iter()
            .find(|k| k.name == self.kernel_name)
            .filter(|k| k.params.len() == self.arguments.len())
            .map(|k| k.params.iter().map(&f).collect())
            .unwrap_or_default()
    }
}

fn dtype(name: &str, arg: &str) -> Result<DType, TunerError> {
    DType::parse_numpy(name).map(|(d, _)| d).map_err(|_| {
        TunerError::Arguments(format!(
            "argument `{arg}` has numpy dtype {name}, which kt cannot pass to a kernel (use a float, int or uint dtype)"
        ))
    })
}

fn call_arg(name: &str, arg: &CallArg) -> Result<TestArg, TunerError> {
    Ok(match arg {
        CallArg::Array {
            dtype: d,
            path,
            answer,
        } => {
            let dtype = dtype(d, name)?;
            let info = read_header(path)?;
            let expected = match answer {
                Some(p) => {
                    let e = read_header(p)?;
                    if e.elements() != info.elements() {
                        return Err(TunerError::Arguments(format!(
                            "the answer for `{name}` has {} elements, the argument {}: give an answer of the argument's size",
                            e.elements(),
                            info.elements()
                        )));
                    }
                    Some(ArraySource::Npy {
                        path: p.clone(),
                        offset: e.data_offset,
                    })
                }
                None => None,
            };
            TestArg::Array(ArrayArg {
                name: name.to_string(),
                dtype,
                lanes: 1,
                elements: info.elements(),
                source: ArraySource::Npy {
                    path: path.clone(),
                    offset: info.data_offset,
                },
                is_output: expected.is_some(),
                expected,
            })
        }
        CallArg::Scalar {
            dtype: d,
            value,
            bytes,
        } => TestArg::Scalar(ScalarArg {
            name: name.to_string(),
            dtype: dtype(d, name)?,
            value: *value,
            bytes: bytes.clone(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "__global__ void vector_add(float *c, float *a, float *b, int n) {\n  int i = blockIdx.x * block_size_x + threadIdx.x;\n  if (i < n) c[i] = a[i] + b[i];\n}\n";

    fn npy(dir: &std::path::Path, name: &str, n: usize) -> PathBuf {
        let path = dir.join(name);
        let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({n},), }}");
        let mut text = format!("{header:<117}\n").into_bytes();
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
        bytes.append(&mut text);
        bytes.extend(std::iter::repeat_n(0u8, 4 * n));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn call(dir: &std::path::Path, json_extra: &str) -> TuneCall {
        let a = npy(dir, "a.npy", 100);
        let text = format!(
            r#"{{"kernel_name": "vector_add", "kernel_source": {src}, "problem_size": ["100"],
                "arguments": [{{"kind": "array", "dtype": "float32", "path": {a}, "answer": {a}}},
                              {{"kind": "array", "dtype": "float32", "path": {a}}},
                              {{"kind": "array", "dtype": "float32", "path": {a}}},
                              {{"kind": "scalar", "dtype": "int32", "value": 100, "bytes": [100, 0, 0, 0]}}],
                "tune_params": [["block_size_x", [32, 64]], ["alpha", [0.5, "x"]]]{json_extra}}}"#,
            src = serde_json::to_string(SOURCE).unwrap(),
            a = serde_json::to_string(&a).unwrap(),
        );
        TuneCall::from_json(&text).unwrap()
    }

    fn output_names(t: &TestSet) -> Vec<&str> {
        t.tests[0]
            .arrays()
            .filter(|a| a.is_output)
            .map(|a| a.name.as_str())
            .collect()
    }

    #[test]
    fn arguments_take_the_kernels_parameter_names_and_answers_make_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let c = call(dir.path(), r#", "atol": 0.01"#);
        let t = c.tests().unwrap();
        let names: Vec<&str> = t.tests[0].args.iter().map(TestArg::name).collect();
        assert_eq!(names, ["c", "a", "b", "n"]);
        assert_eq!(output_names(&t), ["c"]);
        assert_eq!(t.tests[0].tolerances["c"].atol, 0.01);
        assert_eq!(t.tests[0].arrays().next().unwrap().elements, 100);
        assert!(c.options().unwrap().verify);
    }

    #[test]
    fn the_space_keeps_values_of_every_kind_and_refuses_a_float_block_size() {
        let dir = tempfile::tempdir().unwrap();
        let k = call(dir.path(), r#", "restrictions": ["block_size_x > 32"]"#)
            .kernel()
            .unwrap();
        assert_eq!(k.params[1].values, [ParamValue::Float(0.5), "x".into()]);
        assert_eq!(k.restrictions.len(), 1);
        let mut bad = call(dir.path(), "");
        bad.tune_params[0].1 = vec![ParamValue::Float(32.0)];
        assert!(
            bad.kernel()
                .unwrap_err()
                .to_string()
                .contains("`block_size_x` sets the block size")
        );
    }

    #[test]
    fn block_size_names_set_the_launch_and_the_grid_divisors() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = call(
            dir.path(),
            r#", "block_size_names": ["bx"], "grid_div": [null, ["4"], null]"#,
        );
        c.tune_params[0].0 = "bx".into();
        let k = c.kernel().unwrap();
        assert_eq!(k.geometry.block_names.0[0], "bx");
        assert_eq!(k.geometry.grid_div[0], ["bx"]);
        assert_eq!(k.geometry.grid_div[1], ["4"]);
        let config = crate::Config::ints([("bx", 64)]);
        let dims = k.geometry.launch(&config, &Default::default()).unwrap();
        assert_eq!((dims.block, dims.grid), ([64, 1, 1], [2, 1, 1]));
        // a named block size must be an integer, and bad names are refused
        c.tune_params[0].1 = vec![ParamValue::Float(64.0)];
        let e = c.kernel().unwrap_err();
        assert!(e.to_string().contains("`bx` sets the block size"), "{e}");
        let e = call(dir.path(), r#", "block_size_names": ["a", "b", "c", "d"]"#)
            .kernel()
            .unwrap_err();
        assert!(e.to_string().contains("at most three"), "{e}");
    }

    #[test]
    fn kernel_tuner_strategy_names_map_to_kts_and_unknown_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let c = call(
            dir.path(),
            r#", "strategy": "genetic_algorithm", "max_fevals": 10, "iterations": 32"#,
        );
        let o = c.options().unwrap();
        assert_eq!(o.strategy, Strategy::Genetic);
        assert_eq!(o.limits.max_evals, Some(10));
        assert_eq!(o.timing.min_reps, 32);
        let err = call(dir.path(), r#", "strategy": "bayes_opt""#)
            .options()
            .unwrap_err();
        assert!(err.to_string().contains("strategy `bayes_opt`"), "{err}");
    }

    #[test]
    fn cmem_args_become_the_tests_constants_and_an_undeclared_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let filter = npy(dir.path(), "filter.npy", 9);
        let mut c = call(dir.path(), "");
        c.kernel_source = format!("__constant__ float taps[9];\n{SOURCE}");
        c.constants = vec![CallConstant {
            name: "taps".into(),
            dtype: "float32".into(),
            path: filter.clone(),
        }];
        let tests = c.tests().unwrap();
        let constants = &tests.tests[0].constants;
        assert_eq!(constants.len(), 1);
        assert_eq!(
            (constants[0].dtype, constants[0].elements),
            (DType::Float32, Some(9))
        );
        assert!(matches!(&constants[0].source, ArraySource::Npy { path, .. } if *path == filter));
        c.constants[0].name = "weights".into();
        let err = c.tests().unwrap_err().to_string();
        assert!(
            err.contains("cmem_args names `weights`, which the source does not declare `__constant__` (it declares: taps)"),
            "{err}"
        );
    }

    #[test]
    fn without_an_answer_nothing_is_verified_as_in_kernel_tuner() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = call(dir.path(), "");
        if let CallArg::Array { answer, .. } = &mut c.arguments[0] {
            *answer = None;
        }
        assert!(!c.options().unwrap().verify);
        // every array the kernel may write is an output with no expected values (the reference's launches
        // set them); nothing compares a configuration with them
        let t = c.tests().unwrap();
        assert!(
            t.tests[0]
                .arrays()
                .all(|a| a.is_output && a.expected.is_none())
        );
    }

    #[test]
    fn without_an_answer_const_pointers_stay_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = call(dir.path(), "");
        c.kernel_source = SOURCE.replace("float *a, float *b", "const float *a, const float *b");
        if let CallArg::Array { answer, .. } = &mut c.arguments[0] {
            *answer = None;
        }
        let t = c.tests().unwrap();
        assert_eq!(output_names(&t), ["c"]);
    }

    #[test]
    fn with_an_answer_only_answered_arrays_are_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let t = call(dir.path(), "").tests().unwrap();
        assert_eq!(output_names(&t), ["c"]);
    }
}
