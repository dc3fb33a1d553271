//! How a candidate kernel's parameters get their arguments when its signature is not the reference's:
//! the tests are written for the reference, so each candidate parameter is matched to a test argument by
//! name (a parameter that differs only by `const` / `__restrict__` / `volatile` is the same parameter, a
//! pure rename at the same position is followed), and a scalar the reference lacks is computed from an
//! expression over the test's scalars and the configuration (`--arg NAME=EXPR`). Anything else is a clear
//! error naming both signatures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::TunerError;
use crate::model::args::{KernelTest, ParamSpec, TestArg};
use crate::model::expr::{Bindings, eval_number};
use crate::worker::protocol::LaunchArg;
use kt_record::DType;

/// Where one kernel parameter's argument comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ArgBinding {
    /// The test's argument of this name (array or scalar).
    Test(String),
    /// A scalar computed from the test's scalars and the configuration's parameters.
    Computed {
        param: String,
        dtype: DType,
        expr: String,
    },
}

impl ArgBinding {
    /// The launch argument for `test`; `env` binds the test's scalars and the configuration.
    pub fn resolve(&self, test: &KernelTest, env: &Bindings) -> Result<LaunchArg, TunerError> {
        match self {
            ArgBinding::Test(name) => match test.args.iter().find(|a| a.name() == name) {
                Some(TestArg::Array(a)) => Ok(LaunchArg::Array(a.name.clone())),
                Some(TestArg::Scalar(s)) => Ok(LaunchArg::Scalar(s.bytes.clone())),
                None => Err(TunerError::Arguments(format!(
                    "test {} has no argument `{name}`",
                    test.id
                ))),
            },
            ArgBinding::Computed { param, dtype, expr } => {
                let v = eval_number(expr, env)?;
                Ok(LaunchArg::Scalar(dtype.encode_scalar(param, v)?))
            }
        }
    }
}

/// The candidate's arguments in its own parameter order, or `None` when the reference's argument list
/// fits it as it is (same parameters in the same order, qualifiers aside). `given` holds `--arg`
/// expressions for candidate scalars.
pub fn match_arguments(
    reference: &kt_cuda::Kernel,
    candidate: &kt_cuda::Kernel,
    given: &BTreeMap<String, String>,
) -> Result<Option<Vec<ArgBinding>>, TunerError> {
    let positional = kt_cuda::require_same_signature(reference, candidate).is_ok();
    if positional && given.is_empty() {
        return Ok(None);
    }
    let mismatch = |what: String| {
        TunerError::Arguments(format!(
            "{what}\n  reference: {}\n  candidate: {}",
            reference.signature_text(),
            candidate.signature_text()
        ))
    };
    let specs = ParamSpec::from_kernel(candidate);
    let mut out = Vec::new();
    for (i, (p, spec)) in candidate.params.iter().zip(&specs).enumerate() {
        if let Some(expr) = given.get(&p.name) {
            let Some((dtype, 1)) = spec.dtype.filter(|_| !spec.is_pointer) else {
                return Err(mismatch(format!(
                    "--arg {}=…: only a scalar of a known type can be computed; `{}` is not one",
                    p.name, p.type_text
                )));
            };
            out.push(ArgBinding::Computed {
                param: p.name.clone(),
                dtype,
                expr: expr.clone(),
            });
            continue;
        }
        let same_name = reference.params.iter().find(|r| r.name == p.name);
        match same_name {
            Some(r) => {
                let differs =
                    kt_cuda::compare_params(std::slice::from_ref(r), std::slice::from_ref(p))
                        .iter()
                        .any(|c| c.is_breaking());
                if differs {
                    return Err(mismatch(format!(
                        "parameter `{}` is `{}` in the reference but `{}` in the candidate",
                        p.name, r.type_text, p.type_text
                    )));
                }
                out.push(ArgBinding::Test(r.name.clone()));
            }
            // a rename at the same position of an otherwise identical signature
            None if positional => out.push(ArgBinding::Test(reference.params[i].name.clone())),
            None if !p.is_pointer() => {
                return Err(mismatch(format!(
                    "the candidate's scalar `{}` has no counterpart in the reference: give its value with \
                     --arg {}=EXPR (an expression over the reference's scalars and the parameters)",
                    p.name, p.name
                )));
            }
            None => {
                return Err(mismatch(format!(
                    "the candidate's pointer `{}` has no parameter of that name in the reference",
                    p.name
                )));
            }
        }
    }
    // every output the reference writes must reach the candidate, or nothing can be compared
    if let Some(r) = reference
        .params
        .iter()
        .filter(|r| r.is_pointer() && !r.is_const)
        .find(|r| !out.iter().any(|b| b == &ArgBinding::Test(r.name.clone())))
    {
        return Err(mismatch(format!(
            "the candidate takes no `{}`, which the reference writes: their outputs cannot be compared",
            r.name
        )));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::args::ScalarArg;

    fn kernel(src: &str) -> kt_cuda::Kernel {
        kt_cuda::parse(src).unwrap().kernels[0].clone()
    }

    const REF: &str = "__global__ void k(const float* a, float* out, int n) {}";

    #[test]
    fn qualifiers_alone_keep_the_reference_arguments() {
        let c = kernel(
            "__global__ void k(const float* __restrict__ a, float* __restrict__ out, const int n) {}",
        );
        assert_eq!(
            match_arguments(&kernel(REF), &c, &BTreeMap::new()).unwrap(),
            None
        );
    }

    #[test]
    fn parameters_are_matched_by_name_and_a_dropped_scalar_is_fine() {
        let c = kernel("__global__ void k2(float* out, const float* a) {}");
        let m = match_arguments(&kernel(REF), &c, &BTreeMap::new())
            .unwrap()
            .unwrap();
        assert_eq!(
            m,
            vec![ArgBinding::Test("out".into()), ArgBinding::Test("a".into())]
        );
    }

    #[test]
    fn a_scalar_the_reference_lacks_needs_an_expression() {
        let c = kernel("__global__ void k2(const float* a, float* out, int n, int tiles) {}");
        let err = match_arguments(&kernel(REF), &c, &BTreeMap::new()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("--arg tiles=EXPR"), "{text}");
        assert!(
            text.contains("reference: ") && text.contains("candidate: "),
            "{text}"
        );
        let given = BTreeMap::from([("tiles".to_string(), "ceil_div(n, 32)".to_string())]);
        let m = match_arguments(&kernel(REF), &c, &given).unwrap().unwrap();
        let test = KernelTest {
            id: "t".into(),
            args: vec![TestArg::Scalar(ScalarArg {
                name: "n".into(),
                dtype: DType::Int32,
                value: 100.0,
                bytes: 100i32.to_le_bytes().to_vec(),
            })],
            tolerances: Default::default(),
            constants: Vec::new(),
        };
        assert_eq!(
            m[3].resolve(&test, &test.scalars()).unwrap(),
            LaunchArg::Scalar(4i32.to_le_bytes().to_vec())
        );
        assert_eq!(
            m[2].resolve(&test, &test.scalars()).unwrap(),
            LaunchArg::Scalar(100i32.to_le_bytes().to_vec())
        );
    }

    #[test]
    fn a_real_type_difference_names_both_signatures() {
        let c = kernel("__global__ void k(const double* a, float* out, int n) {}");
        let err = match_arguments(&kernel(REF), &c, &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`a`") && err.contains("double") && err.contains("reference: "),
            "{err}"
        );
    }

    #[test]
    fn an_output_the_candidate_does_not_take_is_an_error() {
        let c = kernel("__global__ void k(const float* a, int n) {}");
        let err = match_arguments(&kernel(REF), &c, &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("takes no `out`"), "{err}");
    }
}
