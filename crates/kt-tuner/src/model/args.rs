//! Kernel arguments and the tests that supply them: arrays (from .npy files of a tests directory, or
//! generated from a sidecar's distributions with a seeded generator on the GPU) and scalars typed from the
//! kernel signature. Only descriptions travel to the worker; array bytes are read or generated there, so
//! gigabytes never pass through the protocol pipe.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::TunerError;
pub use crate::model::array_source::{ArraySource, Distribution};
use crate::model::constants::{ConstantArg, ConstantInputs};
use crate::model::expr::{Bindings, eval_count};
use crate::model::geometry::bindings;
use crate::model::space::Config;
use crate::model::tolerance::Tolerance;
use kt_record::DType;
use kt_record::tests_format::npy::read_header;
use kt_record::tests_format::{ManifestArg, TestManifest};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrayArg {
    pub name: String,
    pub dtype: DType,
    /// Lanes of a struct element (3 for float3), 1 for plain arrays.
    pub lanes: u32,
    /// Scalar elements in total (struct elements × lanes).
    pub elements: u64,
    pub source: ArraySource,
    pub is_output: bool,
    /// Expected contents (tests directory `expected/`); without it the reference launch provides them.
    pub expected: Option<ArraySource>,
}

impl ArrayArg {
    pub fn bytes(&self) -> u64 {
        self.elements * self.dtype.size() as u64
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalarArg {
    pub name: String,
    pub dtype: DType,
    pub value: f64,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TestArg {
    Array(ArrayArg),
    Scalar(ScalarArg),
}

impl TestArg {
    pub fn name(&self) -> &str {
        match self {
            TestArg::Array(a) => &a.name,
            TestArg::Scalar(s) => &s.name,
        }
    }
}

/// One set of inputs (and, once known, expected outputs) for a kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelTest {
    pub id: String,
    pub args: Vec<TestArg>,
    pub tolerances: BTreeMap<String, Tolerance>,
    /// Contents of the `__constant__` symbols the kernel reads (none for most kernels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constants: Vec<ConstantArg>,
}

impl KernelTest {
    /// Scalar arguments by name, for problem-size and flops/bytes expressions.
    pub fn scalars(&self) -> Bindings {
        self.args
            .iter()
            .filter_map(|a| match a {
                TestArg::Scalar(s) => Some((s.name.clone(), s.value)),
                TestArg::Array(_) => None,
            })
            .collect()
    }

    pub fn arrays(&self) -> impl Iterator<Item = &ArrayArg> {
        self.args.iter().filter_map(|a| match a {
            TestArg::Array(x) => Some(x),
            TestArg::Scalar(_) => None,
        })
    }

    /// Bytes of all arrays: what the worker keeps on the GPU (twice: working copy + pristine copy).
    pub fn array_bytes(&self) -> u64 {
        self.arrays().map(|a| a.bytes()).sum()
    }

    /// Identity of the inputs for result caching.
    pub fn fingerprint(&self) -> String {
        let mut text = serde_json::to_string(&self.args).unwrap_or_default();
        // constants change what the kernel computes; a test without any keeps its earlier fingerprint
        if !self.constants.is_empty() {
            text += &serde_json::to_string(&self.constants).unwrap_or_default();
        }
        blake3::hash(text.as_bytes()).to_hex()[..16].to_string()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestSet {
    pub tests: Vec<KernelTest>,
}

/// What the tuner needs to know of each kernel parameter, taken from the parsed signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    pub name: String,
    pub is_pointer: bool,
    /// Element type (pointee for pointers); None for types the tuner cannot size (user structs).
    pub dtype: Option<(DType, u32)>,
}

impl ParamSpec {
    pub fn from_kernel(kernel: &kt_cuda::Kernel) -> Vec<ParamSpec> {
        kernel
            .params
            .iter()
            .map(|p| ParamSpec {
                name: p.name.clone(),
                is_pointer: p.pointer_depth > 0 || !p.array_dims.is_empty(),
                // kt-cuda follows typedefs (`typedef __nv_bfloat16 floatX;`); the C type is the fallback
                dtype: p
                    .dtype
                    .as_deref()
                    .and_then(|d| DType::parse_numpy(d).ok())
                    .or_else(|| DType::from_c_type(&p.base_type)),
            })
            .collect()
    }
}

/// One argument of test `id` (directory `t`) as its manifest `m` describes it, its .npy files checked.
fn test_arg(id: &str, t: &Path, m: &TestManifest, a: &ManifestArg) -> Result<TestArg, TunerError> {
    Ok(match a {
        ManifestArg::Array {
            name,
            dtype,
            shape,
            file,
            struct_name,
        } => {
            let (dtype, _) = DType::parse_numpy(dtype)?;
            let path = t.join(file);
            let info = read_header(&path)?;
            if info.dtype != dtype.storage() {
                return Err(TunerError::Arguments(format!(
                    "test {id}: {} holds {} but the manifest says {}",
                    path.display(),
                    info.dtype.numpy_name(),
                    dtype.numpy_name()
                )));
            }
            if let Some(shape) = shape
                && shape != &info.shape
            {
                return Err(TunerError::Arguments(format!(
                    "test {id}: {} has shape {:?}, manifest says {shape:?}",
                    path.display(),
                    info.shape
                )));
            }
            let lanes = match struct_name {
                Some(s) => DType::from_c_type(s).map(|(_, l)| l).unwrap_or(1),
                None => 1,
            };
            let expected = match m.expected_file(name) {
                Some(f) => {
                    let p = t.join(f);
                    let e = read_header(&p)?;
                    if e.elements() != info.elements() || e.dtype != dtype.storage() {
                        return Err(TunerError::Arguments(format!(
                            "test {id}: expected {} does not match the argument's dtype/size",
                            p.display()
                        )));
                    }
                    Some(ArraySource::Npy {
                        path: p,
                        offset: e.data_offset,
                    })
                }
                None => None,
            };
            TestArg::Array(ArrayArg {
                name: name.clone(),
                dtype,
                lanes,
                elements: info.elements(),
                source: ArraySource::Npy {
                    path,
                    offset: info.data_offset,
                },
                is_output: m.outputs.contains(name),
                expected,
            })
        }
        ManifestArg::Scalar { name, dtype, value } => {
            let (dtype, _) = DType::parse_numpy(dtype)?;
            let value = value.as_f64().ok_or_else(|| {
                TunerError::Arguments(format!("test {id}: scalar `{name}` has no value"))
            })?;
            TestArg::Scalar(ScalarArg {
                name: name.clone(),
                dtype,
                value,
                bytes: dtype.encode_scalar(name, value)?,
            })
        }
    })
}

/// Checks that the arguments line up with the signature: same names in the same order, arrays for
/// pointers, scalars whose dtype is the parameter's C type.
fn check_against_signature(
    id: &str,
    args: &[TestArg],
    params: &[ParamSpec],
) -> Result<(), TunerError> {
    if args.len() != params.len() {
        return Err(TunerError::Arguments(format!(
            "test {id}: {} arguments for a kernel with {} parameters",
            args.len(),
            params.len()
        )));
    }
    for (a, p) in args.iter().zip(params) {
        if a.name() != p.name {
            return Err(TunerError::Arguments(format!(
                "test {id}: argument `{}` where the kernel has `{}`",
                a.name(),
                p.name
            )));
        }
        match (a, p.is_pointer) {
            (TestArg::Array(arr), true) => {
                if let Some((d, _)) = p.dtype
                    && d != arr.dtype
                {
                    return Err(TunerError::Arguments(format!(
                        "test {id}: array `{}` is {} but the kernel takes {}",
                        arr.name,
                        arr.dtype.numpy_name(),
                        d.numpy_name()
                    )));
                }
            }
            (TestArg::Scalar(s), false) => match p.dtype {
                Some((d, 1)) if d == s.dtype => {}
                Some((d, _)) => {
                    return Err(TunerError::Arguments(format!(
                        "test {id}: scalar `{}` is {} but the kernel parameter is {}",
                        s.name,
                        s.dtype.numpy_name(),
                        d.numpy_name()
                    )));
                }
                None => {
                    return Err(TunerError::Arguments(format!(
                        "test {id}: scalar `{}` has a type the tuner cannot pass by value",
                        s.name
                    )));
                }
            },
            (TestArg::Array(_), false) => {
                return Err(TunerError::Arguments(format!(
                    "test {id}: `{}` is an array but the kernel takes a scalar",
                    a.name()
                )));
            }
            (TestArg::Scalar(_), true) => {
                return Err(TunerError::Arguments(format!(
                    "test {id}: `{}` is a scalar but the kernel takes a pointer",
                    a.name()
                )));
            }
        }
    }
    Ok(())
}

impl TestSet {
    /// Reads a tests directory (one sub-directory per test with manifest.json, args/, expected/, and
    /// constants/ for the `__constant__` symbols a generator filled).
    pub fn load_dir(
        dir: &Path,
        params: &[ParamSpec],
        tolerance: &BTreeMap<String, Tolerance>,
    ) -> Result<TestSet, TunerError> {
        // absolute paths: the worker reads the files itself, from a work directory of its own
        let dir = &std::fs::canonicalize(dir).map_err(|e| TunerError::io(dir, e))?;
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| TunerError::io(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("manifest.json").is_file())
            .collect();
        entries.sort();
        if entries.is_empty() {
            return Err(TunerError::io(
                dir,
                "no test sub-directory with a manifest.json",
            ));
        }
        let mut tests = Vec::new();
        for t in entries {
            let id = t
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let mpath = t.join("manifest.json");
            let text = std::fs::read_to_string(&mpath).map_err(|e| TunerError::io(&mpath, e))?;
            let m: TestManifest =
                serde_json::from_str(&text).map_err(|e| TunerError::io(&mpath, e))?;
            let mut args = Vec::new();
            for a in &m.args {
                args.push(test_arg(&id, &t, &m, a)?);
            }
            check_against_signature(&id, &args, params)?;
            let constants = m
                .constants
                .iter()
                .map(|c| ConstantArg::from_manifest(&id, &t, c))
                .collect::<Result<_, _>>()?;
            tests.push(KernelTest {
                id,
                args,
                tolerances: tolerance.clone(),
                constants,
            });
        }
        Ok(TestSet { tests })
    }
}

/// The part of a suite sidecar (naive-kernels/NAME.toml) that says how to make inputs.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SuiteInputs {
    #[serde(default)]
    pub outputs: Vec<String>,
    #[serde(default)]
    pub bench: BTreeMap<String, f64>,
    #[serde(default)]
    pub test: BTreeMap<String, f64>,
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
    #[serde(default)]
    pub dtypes: BTreeMap<String, String>,
    #[serde(default)]
    pub sizes: BTreeMap<String, String>,
    #[serde(default)]
    pub rtol: BTreeMap<String, f64>,
    #[serde(default)]
    pub atol: BTreeMap<String, f64>,
    #[serde(default)]
    pub max_mismatch_fraction: BTreeMap<String, f64>,
    /// How each output is compared (the sidecar's `compare`): element by element unless it says `total`.
    #[serde(default)]
    pub compare: BTreeMap<String, kt_cuda::OutputCompare>,
    /// Valid values of size scalars (the sidecar's `size_rules`).
    #[serde(default)]
    pub size_rules: BTreeMap<String, kt_cuda::SizeRule>,
    /// Distribution per `__constant__` symbol the kernel reads (the sidecar's `constants`).
    #[serde(default)]
    pub constants: BTreeMap<String, String>,
    /// The dtypes of those symbols' declarations, for those the sidecar gives no dtype (from the parsed
    /// kernel, not the sidecar: [`SuiteInputs::for_kernel`]).
    #[serde(skip)]
    pub constant_dtypes: BTreeMap<String, String>,
}

/// Which of the sidecar's sizes to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizeChoice {
    Bench,
    Test,
}

impl SuiteInputs {
    /// The input description of a suite sidecar (kt-cuda owns the format and its checks).
    pub fn from_sidecar(s: &kt_cuda::Sidecar) -> Self {
        let num = |v: &kt_cuda::ScalarValue| match v {
            kt_cuda::ScalarValue::Int(i) => *i as f64,
            kt_cuda::ScalarValue::Float(f) => *f,
        };
        SuiteInputs {
            outputs: s.outputs.clone(),
            bench: s.bench.iter().map(|(k, v)| (k.clone(), num(v))).collect(),
            test: s
                .test
                .as_ref()
                .map(|t| t.iter().map(|(k, v)| (k.clone(), num(v))).collect())
                .unwrap_or_default(),
            inputs: s.inputs.clone(),
            dtypes: s.dtypes.clone(),
            sizes: s.sizes.iter().map(|(k, v)| (k.clone(), v.text())).collect(),
            rtol: s.rtol.clone(),
            atol: s.atol.clone(),
            max_mismatch_fraction: s.max_mismatch_fraction.clone(),
            compare: s.compare.clone(),
            size_rules: s.size_rules.clone(),
            constants: s.constants.clone(),
            constant_dtypes: BTreeMap::new(),
        }
    }

    /// [`SuiteInputs::from_sidecar`] with the types of the kernel's `__constant__` declarations, for
    /// constants the sidecar gives no dtype.
    pub fn for_kernel(s: &kt_cuda::Sidecar, kernel: &kt_cuda::Kernel) -> Self {
        SuiteInputs {
            constant_dtypes: crate::model::constants::declared_dtypes(kernel),
            ..Self::from_sidecar(s)
        }
    }

    /// Each output's tolerance: the sidecar's `rtol` / `atol` / `max_mismatch_fraction` / `compare`, anything
    /// it leaves out from the output's dtype (the sidecar's `dtypes`, else float32).
    pub fn tolerances(&self) -> BTreeMap<String, Tolerance> {
        self.tolerances_for(&[])
    }

    /// As [`SuiteInputs::tolerances`], an output the sidecar gives no dtype typed from the kernel's
    /// parameters (a `half*` output gets float16's looser default).
    pub fn tolerances_for(&self, params: &[ParamSpec]) -> BTreeMap<String, Tolerance> {
        self.outputs
            .iter()
            .map(|o| {
                let dtype = self
                    .dtypes
                    .get(o)
                    .and_then(|d| DType::parse_numpy(d).ok())
                    .or_else(|| params.iter().find(|p| &p.name == o).and_then(|p| p.dtype))
                    .map(|(d, _)| d)
                    .unwrap_or(DType::Float32);
                let d = Tolerance::for_dtype(dtype);
                let t = Tolerance {
                    rtol: self.rtol.get(o).copied().unwrap_or(d.rtol),
                    atol: self.atol.get(o).copied().unwrap_or(d.atol),
                    max_mismatch_fraction: self
                        .max_mismatch_fraction
                        .get(o)
                        .copied()
                        .unwrap_or(0.0),
                    terms: None,
                    finite_expected_only: false,
                    total: self.compare.get(o) == Some(&kt_cuda::OutputCompare::Total),
                };
                (o.clone(), t)
            })
            .collect()
    }

    /// Builds `count` tests with seeds 1.. from the distributions. `overrides` replaces scalar values
    /// (`--size n=1000`). Array sizes may name launch parameters only at their defaults (`block_size_x`
    /// = 256); [`SuiteInputs::make_tests_for`] sizes them over a search space.
    pub fn make_tests(
        &self,
        params: &[ParamSpec],
        size: SizeChoice,
        overrides: &BTreeMap<String, f64>,
        count: usize,
    ) -> Result<TestSet, TunerError> {
        self.make_tests_for(params, size, overrides, count, &[])
    }

    /// The `sizes` entries that depend on the launch configuration (they name something other than the
    /// kernel's scalar parameters, e.g. `ceil_div(n, block_size_x)`): array name → element-count
    /// expression. These arrays are allocated at the largest size over the configurations and each run
    /// checks only the elements its configuration covers (`Geometry::array_sizes`).
    pub fn config_dependent_sizes(&self, params: &[ParamSpec]) -> BTreeMap<String, String> {
        let scalar = |n: &str| params.iter().any(|p| !p.is_pointer && p.name == n);
        self.sizes
            .iter()
            .filter(|(_, e)| {
                kt_cuda::expression_identifiers(e)
                    .iter()
                    .any(|id| !scalar(id))
            })
            .map(|(n, e)| (n.clone(), e.clone()))
            .collect()
    }

    /// As [`SuiteInputs::make_tests`], with array sizes that name tunable parameters evaluated at every
    /// configuration of `configs` (the largest is allocated); an empty list means the launch defaults.
    pub fn make_tests_for(
        &self,
        params: &[ParamSpec],
        size: SizeChoice,
        overrides: &BTreeMap<String, f64>,
        count: usize,
        configs: &[Config],
    ) -> Result<TestSet, TunerError> {
        let values = self.values_at(size, overrides);
        let tests = (1..=count.max(1) as u64)
            .map(|seed| self.make_test(params, &values, &format!("gen{seed}"), seed, configs))
            .collect::<Result<_, _>>()?;
        Ok(TestSet { tests })
    }

    /// The scalar values at `size` (the `test` table falls back to `bench`), with `overrides` applied.
    pub fn values_at(&self, size: SizeChoice, overrides: &BTreeMap<String, f64>) -> Bindings {
        let mut values = match size {
            SizeChoice::Test if !self.test.is_empty() => self.test.clone(),
            _ => self.bench.clone(),
        };
        // the sidecar's sizes where its rules (or a candidate's, added for `kt verify`) allow them; what the
        // user gives is taken as given
        kt_cuda::apply_size_rules(&mut values, &self.size_rules);
        values.extend(overrides.iter().map(|(k, v)| (k.clone(), *v)));
        values
    }

    /// One test with the scalar `values`, arrays generated from `seed`, named `id`.
    pub fn make_test(
        &self,
        params: &[ParamSpec],
        values: &Bindings,
        id: &str,
        seed: u64,
        configs: &[Config],
    ) -> Result<KernelTest, TunerError> {
        let missing = |name: &str| {
            TunerError::Arguments(format!(
                "no value for scalar `{name}` (give it in the sidecar or with --size {name}=V)"
            ))
        };
        if let Some(p) = params
            .iter()
            .find(|p| !p.is_pointer && !values.contains_key(&p.name))
        {
            return Err(missing(&p.name));
        }
        let mut args = Vec::new();
        for p in params {
            if p.is_pointer {
                let dist_text = self.inputs.get(&p.name).ok_or_else(|| {
                    TunerError::Arguments(format!(
                        "sidecar has no `inputs` entry for array `{}`",
                        p.name
                    ))
                })?;
                let (dtype, lanes) = match self.dtypes.get(&p.name) {
                    Some(d) => DType::parse_numpy(d)?,
                    None => p.dtype.ok_or_else(|| TunerError::Arguments(format!("array `{}`: no dtype in the sidecar and its C type is not a known scalar", p.name)))?,
                };
                let size_expr = self.sizes.get(&p.name).ok_or_else(|| {
                    TunerError::Arguments(format!(
                        "sidecar has no `sizes` entry for array `{}`",
                        p.name
                    ))
                })?;
                let count = largest_size(&p.name, size_expr, values, configs)?;
                args.push(TestArg::Array(ArrayArg {
                    name: p.name.clone(),
                    dtype,
                    lanes,
                    elements: count * lanes as u64,
                    source: ArraySource::Generate {
                        dist: Distribution::parse(dist_text)?,
                        seed: seed * 1000 + args.len() as u64,
                    },
                    is_output: self.outputs.contains(&p.name),
                    expected: None,
                }));
            } else {
                let value = *values.get(&p.name).ok_or_else(|| missing(&p.name))?;
                let (dtype, _) = p.dtype.ok_or_else(|| {
                    TunerError::Arguments(format!(
                        "scalar `{}` has a type the tuner cannot pass",
                        p.name
                    ))
                })?;
                args.push(TestArg::Scalar(ScalarArg {
                    name: p.name.clone(),
                    dtype,
                    value,
                    bytes: dtype.encode_scalar(&p.name, value)?,
                }));
            }
        }
        Ok(KernelTest {
            id: id.to_string(),
            args,
            tolerances: self.tolerances_for(params),
            constants: ConstantInputs {
                distributions: &self.constants,
                dtypes: &self.dtypes,
                declared_dtypes: &self.constant_dtypes,
                sizes: &self.sizes,
            }
            .args(values, seed)?,
        })
    }
}

/// An array's element count at its largest over `configs` (the launch defaults when there are none).
fn largest_size(
    array: &str,
    expr: &str,
    scalars: &Bindings,
    configs: &[Config],
) -> Result<u64, TunerError> {
    let default = [Config(vec![])];
    let configs = if configs.is_empty() {
        &default[..]
    } else {
        configs
    };
    let mut largest = 0;
    for c in configs {
        let n = eval_count(expr, &bindings(c, scalars)).map_err(|e| {
            TunerError::Arguments(format!(
                "size of array `{array}`: {e}; a name that is neither a scalar argument nor a launch \
                 parameter must be tuned or given (--param NAME=V, or --size NAME=V for a scalar)"
            ))
        })?;
        largest = largest.max(n);
    }
    Ok(largest)
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
