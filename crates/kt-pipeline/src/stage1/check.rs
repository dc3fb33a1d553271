//! Checks of every Stage 1 answer against the parsed signature. A refusal is a sentence addressed to the LLM:
//! it names the wrong thing and lists what would have been right, because it is appended to the next prompt.

use std::collections::BTreeSet;

use kt_cuda::Kernel;

use crate::kernel_info::ProblemDimension;
use crate::problem_size::SizeExpression;

use super::answers::{KernelDescription, LaunchDimensionality, OutputsAnswer, ProblemSizeAnswer};

/// A refused answer: why, in words for the LLM.
pub type Refusal = String;

fn quoted(names: &[String]) -> String {
    if names.is_empty() {
        return "(none)".into();
    }
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn scalar_names(kernel: &Kernel) -> Vec<String> {
    kernel
        .params
        .iter()
        .filter(|p| !p.is_pointer())
        .map(|p| p.name.clone())
        .collect()
}

fn writable_pointer_names(kernel: &Kernel) -> Vec<String> {
    kernel
        .params
        .iter()
        .filter(|p| p.is_pointer() && !p.is_const)
        .map(|p| p.name.clone())
        .collect()
}

pub fn check_description(answer: &KernelDescription) -> Result<String, Refusal> {
    let text = answer.description.trim();
    if text.is_empty() {
        return Err(
            "the description is empty; say in one or two sentences what the kernel computes".into(),
        );
    }
    Ok(text.to_string())
}

pub fn check_dimensionality(answer: &LaunchDimensionality) -> Result<usize, Refusal> {
    match answer.dimensions {
        1..=3 => Ok(answer.dimensions as usize),
        n => Err(format!(
            "{n} is not a grid dimensionality; CUDA grids have 1, 2 or 3 dimensions"
        )),
    }
}

/// Each expression must parse and read only scalar parameters; there must be one per dimension.
pub fn check_problem_size(
    kernel: &Kernel,
    dimensions: usize,
    answer: &ProblemSizeAnswer,
) -> Result<Vec<ProblemDimension>, Refusal> {
    if answer.dimensions.len() != dimensions {
        return Err(format!(
            "you gave {} expression(s) for a {dimensions}-dimensional launch; give exactly {dimensions}, x first",
            answer.dimensions.len()
        ));
    }
    let scalars = scalar_names(kernel);
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for (axis, text) in ["x", "y", "z"].iter().zip(&answer.dimensions) {
        let expr = match SizeExpression::parse(text) {
            Ok(e) => e,
            Err(err) => {
                problems.push(format!("dimension {axis}: {err}"));
                continue;
            }
        };
        for name in expr.identifiers() {
            if scalars.contains(&name) {
                continue;
            }
            let why = match kernel.param(&name) {
                Some(_) => "is a pointer parameter, not a scalar".to_string(),
                None => format!("is not a parameter of `{}`", kernel.name),
            };
            problems.push(format!("dimension {axis}: `{name}` in `{text}` {why}"));
        }
        out.push(ProblemDimension {
            expression: expr.text().to_string(),
        });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(format!(
            "{}; the scalar parameters are {}",
            problems.join("; "),
            quoted(&scalars)
        ))
    }
}

/// Outputs must be non-const pointer parameters, at least one; `inputs_and_outputs` must be among them.
pub fn check_outputs(
    kernel: &Kernel,
    answer: &OutputsAnswer,
) -> Result<(Vec<String>, Vec<String>), Refusal> {
    let writable = writable_pointer_names(kernel);
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    let mut outputs = Vec::new();
    for name in &answer.outputs {
        let name = name.trim().to_string();
        if !seen.insert(name.clone()) {
            continue;
        }
        match kernel.param(&name) {
            None => problems.push(format!("`{name}` is not a parameter of `{}`", kernel.name)),
            Some(p) if !p.is_pointer() => problems.push(format!(
                "`{name}` is a scalar passed by value; the kernel cannot write it back"
            )),
            Some(p) if p.is_const => problems.push(format!(
                "`{name}` is declared const ({}); the kernel cannot write it",
                p.type_text
            )),
            Some(_) => outputs.push(name),
        }
    }
    if answer.outputs.is_empty() {
        problems.push("no output given; a kernel must write at least one pointer parameter".into());
    }
    let mut both = Vec::new();
    for name in &answer.inputs_and_outputs {
        let name = name.trim().to_string();
        if !answer.outputs.iter().any(|o| o.trim() == name) {
            problems.push(format!(
                "`{name}` is listed in inputs_and_outputs but not in outputs (it must be in both)"
            ));
        } else if !both.contains(&name) {
            both.push(name);
        }
    }
    if problems.is_empty() {
        // Keep the kernel's parameter order, whatever order the answer used.
        outputs.sort_by_key(|n| kernel.params.iter().position(|p| &p.name == n));
        both.sort_by_key(|n| kernel.params.iter().position(|p| &p.name == n));
        Ok((outputs, both))
    } else {
        Err(format!(
            "{}; the writable (non-const pointer) parameters are {}",
            problems.join("; "),
            quoted(&writable)
        ))
    }
}

/// The block shape of the naive launch when no sidecar says otherwise.
pub fn default_block(dimensions: usize) -> [u32; 3] {
    match dimensions {
        1 => [256, 1, 1],
        2 => [16, 16, 1],
        _ => [8, 8, 4],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn matmul() -> Kernel {
        let src = "extern \"C\" __global__ void matrixMultiply(const float* A, const float* B, float* C, int A_width, int A_height, int B_width) {}";
        kt_cuda::parse(src)
            .unwrap()
            .select_kernel(None)
            .unwrap()
            .clone()
    }

    #[test]
    fn problem_size_naming_a_pointer_or_an_unknown_name_is_refused_with_the_scalars_listed() {
        let k = matmul();
        let err = check_problem_size(
            &k,
            2,
            &ProblemSizeAnswer {
                dimensions: vec!["C".into(), "rows".into()],
            },
        )
        .unwrap_err();
        assert!(err.contains("`C` in `C` is a pointer parameter"), "{err}");
        assert!(
            err.contains("`rows` in `rows` is not a parameter of `matrixMultiply`"),
            "{err}"
        );
        assert!(err.contains("`A_width`, `A_height`, `B_width`"), "{err}");
        let ok = check_problem_size(
            &k,
            2,
            &ProblemSizeAnswer {
                dimensions: vec!["B_width".into(), " A_height ".into()],
            },
        )
        .unwrap();
        assert_eq!(
            ok,
            vec![
                ProblemDimension {
                    expression: "B_width".into()
                },
                ProblemDimension {
                    expression: "A_height".into()
                }
            ]
        );
    }

    #[test]
    fn problem_size_with_the_wrong_number_of_dimensions_is_refused() {
        let err = check_problem_size(
            &matmul(),
            2,
            &ProblemSizeAnswer {
                dimensions: vec!["B_width".into()],
            },
        )
        .unwrap_err();
        assert!(err.contains("exactly 2"), "{err}");
    }

    #[test]
    fn const_inputs_scalars_and_unknown_names_cannot_be_outputs() {
        let k = matmul();
        let err = check_outputs(
            &k,
            &OutputsAnswer {
                outputs: vec!["A".into(), "A_width".into(), "D".into()],
                inputs_and_outputs: vec![],
            },
        )
        .unwrap_err();
        assert!(err.contains("`A` is declared const"), "{err}");
        assert!(err.contains("`A_width` is a scalar"), "{err}");
        assert!(err.contains("`D` is not a parameter"), "{err}");
        assert!(err.contains("parameters are `C`"), "{err}");
        let err = check_outputs(
            &k,
            &OutputsAnswer {
                outputs: vec![],
                inputs_and_outputs: vec![],
            },
        )
        .unwrap_err();
        assert!(err.contains("at least one"), "{err}");
        let err = check_outputs(
            &k,
            &OutputsAnswer {
                outputs: vec!["C".into()],
                inputs_and_outputs: vec!["B".into()],
            },
        )
        .unwrap_err();
        assert!(err.contains("not in outputs"), "{err}");
        assert_eq!(
            check_outputs(
                &k,
                &OutputsAnswer {
                    outputs: vec!["C".into(), "C".into()],
                    inputs_and_outputs: vec!["C".into()]
                }
            )
            .unwrap(),
            (vec!["C".to_string()], vec!["C".to_string()])
        );
    }

    #[test]
    fn dimensionality_outside_one_to_three_is_refused() {
        assert!(check_dimensionality(&LaunchDimensionality { dimensions: 0 }).is_err());
        assert!(check_dimensionality(&LaunchDimensionality { dimensions: 4 }).is_err());
        assert_eq!(
            check_dimensionality(&LaunchDimensionality { dimensions: 2 }).unwrap(),
            2
        );
        assert!(
            check_description(&KernelDescription {
                description: "  ".into()
            })
            .is_err()
        );
    }
}
