//! A test's `__constant__` inputs: the contents of constant-memory symbols a kernel reads, which no argument
//! carries. Like arrays they are descriptions (a .npy file or a seeded distribution); the worker writes
//! them into the loaded module before the launches of a request, so a module loaded afresh (a reload
//! between tests, a restarted worker) never runs on an empty symbol.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::TunerError;
use crate::model::array_source::{ArraySource, Distribution};
use crate::model::expr::{Bindings, eval_count};
use kt_record::DType;
use kt_record::tests_format::ManifestConstant;
use kt_record::tests_format::npy::read_header;

/// One `__constant__` symbol's contents for a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConstantArg {
    /// The symbol's name in the module (a file-scope `__constant__` variable outside any namespace).
    pub name: String,
    pub dtype: DType,
    /// Scalar elements written. `None` (generated contents only): the whole symbol, as large as the loaded
    /// module says, since its length may be a macro the configuration sets.
    pub elements: Option<u64>,
    pub source: ArraySource,
}

impl ConstantArg {
    /// A constant of test `id` (directory `dir`) as its manifest describes it: its .npy file, checked against
    /// the manifest's dtype and shape, written whole.
    pub fn from_manifest(id: &str, dir: &Path, c: &ManifestConstant) -> Result<Self, TunerError> {
        let (dtype, _) = DType::parse_numpy(&c.dtype)?;
        let path = dir.join(&c.file);
        let info = read_header(&path)?;
        if info.dtype != dtype.storage() || c.shape.as_ref().is_some_and(|s| s != &info.shape) {
            return Err(TunerError::Arguments(format!(
                "test {id}: constant `{}`: {} holds {} {:?} but the manifest says {} {:?}",
                c.name,
                path.display(),
                info.dtype.numpy_name(),
                info.shape,
                dtype.numpy_name(),
                c.shape.as_deref().unwrap_or(&info.shape)
            )));
        }
        Ok(ConstantArg {
            name: c.name.clone(),
            dtype,
            elements: Some(info.elements()),
            source: ArraySource::Npy {
                path,
                offset: info.data_offset,
            },
        })
    }

    /// How many elements go into a symbol of `symbol_bytes`: its `elements`, or as many as fit. An error
    /// names the symbol when the contents are larger than the symbol.
    pub fn elements_for(&self, symbol_bytes: u64) -> Result<u64, String> {
        let size = self.dtype.size() as u64;
        let fit = symbol_bytes / size;
        match self.elements {
            Some(n) if n > fit => Err(format!(
                "constant `{}`: the test gives {n} {} elements ({} bytes) but the module's symbol holds \
                 {symbol_bytes} bytes",
                self.name,
                self.dtype.numpy_name(),
                n * size
            )),
            Some(n) => Ok(n),
            None => Ok(fit),
        }
    }
}

/// What a sidecar says of the `__constant__` symbols (its `constants`, with their `dtypes` and `sizes`) and
/// the dtypes their declarations give: everything about a test's constants but its seed.
#[derive(Debug, Clone, Copy)]
pub struct ConstantInputs<'a> {
    /// Symbol → distribution (`randn`, `randint:0:9`, …).
    pub distributions: &'a BTreeMap<String, String>,
    /// The sidecar's `dtypes` (they win over the declarations').
    pub dtypes: &'a BTreeMap<String, String>,
    /// Symbol → dtype of its declaration (`float32`).
    pub declared_dtypes: &'a BTreeMap<String, String>,
    /// The sidecar's `sizes`: an element count for a symbol that the test fills only in part.
    pub sizes: &'a BTreeMap<String, String>,
}

impl ConstantInputs<'_> {
    /// The constants of one test: element counts at the scalar `values` (else the whole symbol), contents
    /// generated from `seed`.
    pub fn args(&self, values: &Bindings, seed: u64) -> Result<Vec<ConstantArg>, TunerError> {
        let mut out = Vec::new();
        for (i, (name, dist)) in self.distributions.iter().enumerate() {
            let dtype_name = self
                .dtypes
                .get(name)
                .or_else(|| self.declared_dtypes.get(name))
                .ok_or_else(|| {
                    TunerError::Arguments(format!(
                        "constant `{name}`: its C type is not one kt can generate; give it in the sidecar's \
                         `dtypes` (e.g. {name} = \"float32\")"
                    ))
                })?;
            let (dtype, lanes) = DType::parse_numpy(dtype_name)?;
            let elements = match self.sizes.get(name) {
                Some(expr) => Some(
                    eval_count(expr, values).map_err(|e| {
                        TunerError::Arguments(format!("size of constant `{name}`: {e}"))
                    })? * u64::from(lanes),
                ),
                None => None,
            };
            out.push(ConstantArg {
                name: name.clone(),
                dtype,
                elements,
                source: ArraySource::Generate {
                    dist: Distribution::parse(dist)?,
                    // apart from the arrays' seeds (seed * 1000 + argument index)
                    seed: seed * 1000 + 500 + i as u64,
                },
            });
        }
        Ok(out)
    }
}

/// The dtype of each `__constant__` symbol `kernel` reads, where kt knows its C type.
pub fn declared_dtypes(kernel: &kt_cuda::Kernel) -> BTreeMap<String, String> {
    kernel
        .constant_memory
        .iter()
        .filter_map(|c| Some((c.name.clone(), c.dtype.clone()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sidecar {
        distributions: BTreeMap<String, String>,
        dtypes: BTreeMap<String, String>,
        declared: BTreeMap<String, String>,
        sizes: BTreeMap<String, String>,
    }

    impl Sidecar {
        fn new() -> Self {
            Sidecar {
                distributions: [("taps".to_string(), "randn".to_string())].into(),
                dtypes: BTreeMap::new(),
                declared: [("taps".to_string(), "float32".to_string())].into(),
                sizes: BTreeMap::new(),
            }
        }

        fn args(&self, values: &Bindings, seed: u64) -> Result<Vec<ConstantArg>, TunerError> {
            ConstantInputs {
                distributions: &self.distributions,
                dtypes: &self.dtypes,
                declared_dtypes: &self.declared,
                sizes: &self.sizes,
            }
            .args(values, seed)
        }
    }

    #[test]
    fn a_constant_without_a_size_fills_the_whole_symbol_of_its_declared_dtype() {
        let args = Sidecar::new().args(&Bindings::new(), 2).unwrap();
        assert_eq!(args.len(), 1);
        assert_eq!((args[0].dtype, args[0].elements), (DType::Float32, None));
        assert_eq!(args[0].elements_for(68).unwrap(), 17);
        assert!(matches!(
            args[0].source,
            ArraySource::Generate { seed: 2500, .. }
        ));
    }

    #[test]
    fn a_sized_constant_is_checked_against_the_symbol() {
        let mut s = Sidecar::new();
        s.sizes.insert("taps".into(), "k * k".into());
        s.dtypes.insert("taps".into(), "int32".into());
        let args = s.args(&[("k".to_string(), 5.0)].into(), 1).unwrap();
        assert_eq!((args[0].dtype, args[0].elements), (DType::Int32, Some(25)));
        assert_eq!(args[0].elements_for(400).unwrap(), 25);
        let err = args[0].elements_for(64).unwrap_err();
        assert!(
            err.contains("constant `taps`: the test gives 25 int32 elements (100 bytes)"),
            "{err}"
        );
    }

    #[test]
    fn a_constant_of_a_type_kt_cannot_generate_needs_a_dtype() {
        let mut s = Sidecar::new();
        s.declared.clear();
        let err = s.args(&Bindings::new(), 1).unwrap_err().to_string();
        assert!(err.contains("give it in the sidecar's `dtypes`"), "{err}");
    }

    #[test]
    fn the_declared_dtype_comes_from_the_parsed_kernel() {
        let src = "__constant__ float w[3];\n__constant__ int unread;\n\
                   __global__ void k(float *o) { o[threadIdx.x] = w[threadIdx.x % 3]; }";
        let kernel = kt_cuda::parse(src).unwrap().kernels[0].clone();
        assert_eq!(
            declared_dtypes(&kernel),
            BTreeMap::from([("w".to_string(), "float32".to_string())])
        );
    }
}
