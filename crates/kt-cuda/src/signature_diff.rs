//! Comparing a kernel's signature before and after a transformation. Tests, the tuner's argument list and
//! the sidecar all refer to parameters by position, name and type, so a strategy's rewrite must keep them;
//! this says exactly what changed when it did not.

use serde::{Deserialize, Serialize};

use crate::error::CudaError;
use crate::kernel::{Kernel, KernelParam};

/// One difference between two parameter lists. Indices are 0-based positions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum SignatureChange {
    KernelRenamed {
        before: String,
        after: String,
    },
    Added {
        index: usize,
        name: String,
        type_text: String,
    },
    Removed {
        index: usize,
        name: String,
        type_text: String,
    },
    /// The element type, pointer depth or array dimensions differ.
    Retyped {
        index: usize,
        name: String,
        before: String,
        after: String,
    },
    /// Only `const`/`__restrict__`/`volatile` differ: the same parameter (the argument passed is the same).
    QualifiersChanged {
        index: usize,
        name: String,
        before: String,
        after: String,
    },
    Reordered {
        name: String,
        from: usize,
        to: usize,
    },
    Renamed {
        index: usize,
        before: String,
        after: String,
    },
}

impl SignatureChange {
    /// Whether a caller written for the old signature breaks (everything but qualifier changes).
    pub fn is_breaking(&self) -> bool {
        !matches!(self, SignatureChange::QualifiersChanged { .. })
    }
}

impl std::fmt::Display for SignatureChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignatureChange::KernelRenamed { before, after } => {
                write!(f, "kernel renamed from `{before}` to `{after}`")
            }
            SignatureChange::Added {
                index,
                name,
                type_text,
            } => {
                write!(
                    f,
                    "parameter `{type_text} {name}` added at position {}",
                    index + 1
                )
            }
            SignatureChange::Removed {
                index,
                name,
                type_text,
            } => {
                write!(
                    f,
                    "parameter `{type_text} {name}` (position {}) removed",
                    index + 1
                )
            }
            SignatureChange::Retyped {
                index,
                name,
                before,
                after,
            } => {
                write!(
                    f,
                    "parameter `{name}` (position {}) changed type from `{before}` to `{after}`",
                    index + 1
                )
            }
            SignatureChange::QualifiersChanged {
                index,
                name,
                before,
                after,
            } => write!(
                f,
                "parameter `{name}` (position {}) changed qualifiers from `{before}` to `{after}`",
                index + 1
            ),
            SignatureChange::Reordered { name, from, to } => {
                write!(
                    f,
                    "parameter `{name}` moved from position {} to {}",
                    from + 1,
                    to + 1
                )
            }
            SignatureChange::Renamed {
                index,
                before,
                after,
            } => {
                write!(
                    f,
                    "parameter {} renamed from `{before}` to `{after}`",
                    index + 1
                )
            }
        }
    }
}

/// The type a caller must pass: element type, pointer depth and array dimensions, without qualifiers.
fn passed_type(p: &KernelParam) -> (String, u8, Vec<String>) {
    (p.base_type.clone(), p.pointer_depth, p.array_dims.clone())
}

fn type_change(
    index: usize,
    name: &str,
    before: &KernelParam,
    after: &KernelParam,
) -> Option<SignatureChange> {
    if passed_type(before) != passed_type(after) {
        Some(SignatureChange::Retyped {
            index,
            name: name.to_string(),
            before: before.type_text.clone(),
            after: after.type_text.clone(),
        })
    } else if (before.is_const, before.is_restrict, before.is_volatile)
        != (after.is_const, after.is_restrict, after.is_volatile)
    {
        Some(SignatureChange::QualifiersChanged {
            index,
            name: name.to_string(),
            before: before.type_text.clone(),
            after: after.type_text.clone(),
        })
    } else {
        None
    }
}

/// Whether two kernels take the same arguments: parameters that differ only by `const`, `__restrict__` or
/// `volatile` (or by name) are the same parameter; a different type, count or order is an error naming both
/// signatures and every difference.
pub fn require_same_signature(before: &Kernel, after: &Kernel) -> Result<(), CudaError> {
    let breaking: Vec<String> = compare_params(&before.params, &after.params)
        .iter()
        .filter(|c| c.is_breaking() && !matches!(c, SignatureChange::Renamed { .. }))
        .map(ToString::to_string)
        .collect();
    if breaking.is_empty() {
        Ok(())
    } else {
        Err(CudaError::SignatureMismatch {
            before: before.signature_text(),
            after: after.signature_text(),
            changes: breaking,
        })
    }
}

/// Every difference between two kernels' signatures (name and parameters); empty when they match.
pub fn compare_signatures(before: &Kernel, after: &Kernel) -> Vec<SignatureChange> {
    let mut changes = Vec::new();
    if before.name != after.name {
        changes.push(SignatureChange::KernelRenamed {
            before: before.name.clone(),
            after: after.name.clone(),
        });
    }
    changes.extend(compare_params(&before.params, &after.params));
    changes
}

/// Every difference between two parameter lists. Parameters are matched by name first; an unmatched pair at
/// the same position with the same passed type counts as a rename rather than a removal plus an addition.
pub fn compare_params(before: &[KernelParam], after: &[KernelParam]) -> Vec<SignatureChange> {
    let mut changes = Vec::new();
    let after_index = |name: &str| after.iter().position(|p| p.name == name);
    let before_index = |name: &str| before.iter().position(|p| p.name == name);

    // renames: same position, name gone on both sides, same passed type
    let mut renamed_before = vec![false; before.len()];
    let mut renamed_after = vec![false; after.len()];
    for (i, b) in before.iter().enumerate() {
        if let Some(a) = after.get(i)
            && after_index(&b.name).is_none()
            && before_index(&a.name).is_none()
            && passed_type(a) == passed_type(b)
        {
            renamed_before[i] = true;
            renamed_after[i] = true;
            changes.push(SignatureChange::Renamed {
                index: i,
                before: b.name.clone(),
                after: a.name.clone(),
            });
            changes.extend(type_change(i, &a.name, b, a));
        }
    }
    for (i, b) in before.iter().enumerate() {
        if renamed_before[i] {
            continue;
        }
        match after_index(&b.name) {
            None => changes.push(SignatureChange::Removed {
                index: i,
                name: b.name.clone(),
                type_text: b.type_text.clone(),
            }),
            Some(j) => {
                if j != i {
                    changes.push(SignatureChange::Reordered {
                        name: b.name.clone(),
                        from: i,
                        to: j,
                    });
                }
                changes.extend(type_change(j, &b.name, b, &after[j]));
            }
        }
    }
    for (j, a) in after.iter().enumerate() {
        if !renamed_after[j] && before_index(&a.name).is_none() {
            changes.push(SignatureChange::Added {
                index: j,
                name: a.name.clone(),
                type_text: a.type_text.clone(),
            });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn kernel(src: &str) -> Kernel {
        parse(src).unwrap().kernels()[0].clone()
    }

    fn changes(before: &str, after: &str) -> Vec<String> {
        compare_signatures(&kernel(before), &kernel(after))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn identical_signatures_with_different_bodies_have_no_changes() {
        let c = changes(
            "__global__ void k(float *a, int n) { a[0] = n; }",
            "__global__ void k(float *a,\n  int n) { if (n) a[threadIdx.x] = 1; }",
        );
        assert!(c.is_empty(), "{c:?}");
    }

    #[test]
    fn added_removed_retyped_reordered_and_renamed_are_each_reported() {
        assert_eq!(
            changes(
                "__global__ void k(float *a, int n) {}",
                "__global__ void k(float *a, int n, int m) {}"
            ),
            vec!["parameter `int m` added at position 3"]
        );
        assert_eq!(
            changes(
                "__global__ void k(float *a, int n) {}",
                "__global__ void k(float *a) {}"
            ),
            vec!["parameter `int n` (position 2) removed"]
        );
        assert_eq!(
            changes(
                "__global__ void k(float *a, int n) {}",
                "__global__ void k(double *a, int n) {}"
            ),
            vec!["parameter `a` (position 1) changed type from `float *` to `double *`"]
        );
        assert_eq!(
            changes(
                "__global__ void k(float *a, float *b) {}",
                "__global__ void k(float *b, float *a) {}"
            ),
            vec![
                "parameter `a` moved from position 1 to 2",
                "parameter `b` moved from position 2 to 1"
            ]
        );
        assert_eq!(
            changes(
                "__global__ void k(float *a, int n) {}",
                "__global__ void k(float *a, int size) {}"
            ),
            vec!["parameter 2 renamed from `n` to `size`"]
        );
    }

    #[test]
    fn adding_restrict_is_reported_but_not_breaking() {
        let c = compare_signatures(
            &kernel("__global__ void k(float *a) {}"),
            &kernel("__global__ void k(const float * __restrict__ a) {}"),
        );
        assert_eq!(c.len(), 1);
        assert!(!c[0].is_breaking());
        assert!(matches!(
            c[0],
            SignatureChange::QualifiersChanged { index: 0, .. }
        ));
    }

    #[test]
    fn const_restrict_and_volatile_alone_are_the_same_parameter() {
        let before = kernel("__global__ void k(float *a, int *flag, int n) {}");
        let after = kernel(
            "__global__ void k(const float * __restrict__ a, volatile int *flag, const int n) {}",
        );
        assert!(require_same_signature(&before, &after).is_ok());
        let c = compare_signatures(&before, &after);
        assert!(c.iter().all(|x| !x.is_breaking()), "{c:?}");
        assert!(
            c.iter()
                .any(|x| matches!(x, SignatureChange::QualifiersChanged { index: 1, .. }))
        );
    }

    #[test]
    fn a_real_difference_is_an_error_naming_both_signatures() {
        let before = kernel("__global__ void k(float *a, int n) {}");
        let after = kernel("__global__ void k(double *a, int n, int m) {}");
        let err = require_same_signature(&before, &after)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`k(float *a, int n)` vs `k(double *a, int n, int m)`"),
            "{err}"
        );
        assert!(
            err.contains("changed type from `float *` to `double *`"),
            "{err}"
        );
        assert!(err.contains("`int m` added at position 3"), "{err}");
        let swapped = kernel("__global__ void k(int n, float *a) {}");
        assert!(require_same_signature(&before, &swapped).is_err());
    }
}
