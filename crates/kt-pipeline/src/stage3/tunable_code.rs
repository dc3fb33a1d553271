//! [`TunableCode`]: a kernel version's code with its search space and launch geometry, as the LLM's rewrite
//! gives it (kt-tuner's `TunableKernel` is what it becomes once the problem it runs on is added), and
//! [`KernelVersion`]: one that was verified and timed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::answers::{GridDivisors, TunableParameter};
use crate::kernel_info::KernelInfo;

/// A kernel source with its search space and launch geometry (Kernel Tuner's conventions: parameters become
/// `#define`s, the block is `block_size_x/y/z`, the grid is ceil(problem size / product of the divisors)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunableCode {
    pub code: String,
    pub parameters: Vec<TunableParameter>,
    /// Boolean expressions over parameter names that every configuration must meet.
    pub restrictions: Vec<String>,
    /// Per dimension x, y, z: the names whose product divides the problem size.
    pub grid_divisors: [Vec<String>; 3],
    /// Dynamic shared memory in bytes, as an expression over parameter names.
    pub dynamic_shared_memory: Option<String>,
    /// Configurations the rewrite's author expects to win (`KernelRewrite::expected_best`, checked against the
    /// parameters): the tuner measures them first, so racing has a strong best from the start. Each names some
    /// or all parameters. Absent from kernels recorded before, whose hashes stay as they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<BTreeMap<String, i64>>,
}

/// The launch-geometry names kt defines for every configuration, whether or not they are tuned.
pub const BLOCK_SIZE_NAMES: [&str; 3] = ["block_size_x", "block_size_y", "block_size_z"];

impl TunableCode {
    /// The user's kernel as given, launched the way the naive code expects: its default block as single-valued
    /// block-size parameters, so that "tuning" it measures exactly the default launch.
    pub fn original(code: &str, info: &KernelInfo) -> Self {
        let mut parameters = Vec::new();
        for (d, name) in BLOCK_SIZE_NAMES
            .iter()
            .enumerate()
            .take(info.dimensions().clamp(1, 3))
        {
            parameters.push(TunableParameter {
                name: name.to_string(),
                values: vec![i64::from(info.default_block[d])],
            });
        }
        Self {
            code: code.to_string(),
            parameters,
            restrictions: Vec::new(),
            grid_divisors: default_grid_divisors(),
            dynamic_shared_memory: None,
            seeds: Vec::new(),
        }
    }

    /// A rewrite's grid divisors, filling unset dimensions with the defaults.
    pub fn divisors_from(answer: &GridDivisors) -> [Vec<String>; 3] {
        let [dx, dy, dz] = default_grid_divisors();
        [
            answer.x.clone().unwrap_or(dx),
            answer.y.clone().unwrap_or(dy),
            answer.z.clone().unwrap_or(dz),
        ]
    }

    /// Number of configurations before restrictions.
    pub fn space_size(&self) -> u64 {
        self.parameters
            .iter()
            .map(|p| p.values.len() as u64)
            .product()
    }

    pub fn parameter_names(&self) -> Vec<&str> {
        self.parameters.iter().map(|p| p.name.as_str()).collect()
    }

    /// Short content hash, for file names and effect keys.
    /// The seeds among `expected` that name only these parameters, each with one of its values (a seed that
    /// names a parameter the naming pass renamed, or a value outside the list, cannot be found in the space).
    pub fn usable_seeds(
        expected: &[BTreeMap<String, i64>],
        parameters: &[TunableParameter],
    ) -> Vec<BTreeMap<String, i64>> {
        let fits = |(name, value): (&String, &i64)| {
            parameters
                .iter()
                .any(|p| &p.name == name && p.values.contains(value))
        };
        expected
            .iter()
            .filter(|seed| !seed.is_empty() && seed.iter().all(fits))
            .cloned()
            .collect()
    }

    /// The kernel's identity: its code, space and geometry. The seeds only order the search, so a kernel keeps
    /// its hash (and its results cache) whichever configurations were expected to win.
    pub fn content_hash(&self) -> String {
        let unseeded = TunableCode {
            seeds: Vec::new(),
            ..self.clone()
        };
        let json = serde_json::to_vec(&unseeded).unwrap_or_default();
        blake3::hash(&json).to_hex()[..16].to_string()
    }
}

/// Kernel Tuner's default divisors: one block per `block_size_<d>` elements.
pub fn default_grid_divisors() -> [Vec<String>; 3] {
    BLOCK_SIZE_NAMES.map(|n| vec![n.to_string()])
}

/// The `step` of the user's kernel as a [`KernelVersion`] (the best one until a step is accepted).
pub(crate) const ORIGINAL_STEP: &str = kt_record::ORIGINAL_STEP;

/// A kernel that was verified on every test and timed at its best configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelVersion {
    pub kernel: TunableCode,
    /// Median time of the best configuration, in milliseconds.
    pub time_ms: f64,
    /// The measured spread of that time (ms): a gain smaller than this is not a gain.
    pub noise_ms: f64,
    pub best_params: BTreeMap<String, i64>,
    /// The step that produced it (`original` for the user's kernel).
    pub step: String,
    /// `kernels/NNN-<slug>.cu` of this version, once written.
    pub file: Option<String>,
    pub percent_of_peak: Option<f64>,
    #[serde(default)]
    pub gflops: Option<f64>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::kernel_info::ProblemDimension;

    #[test]
    fn only_seeds_within_the_parameters_values_are_kept_and_they_leave_the_hash_as_it_was() {
        let params = vec![
            TunableParameter {
                name: "block_size_x".into(),
                values: vec![16, 32],
            },
            TunableParameter {
                name: "tile".into(),
                values: vec![1, 2],
            },
        ];
        let seed = |pairs: &[(&str, i64)]| -> BTreeMap<String, i64> {
            pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
        };
        let expected = vec![
            seed(&[("block_size_x", 32), ("tile", 2)]),
            seed(&[("tile", 1)]),
            seed(&[("block_size_x", 64)]),
            seed(&[("renamed", 1)]),
            seed(&[]),
        ];
        let kept = TunableCode::usable_seeds(&expected, &params);
        assert_eq!(kept, expected[..2].to_vec());
        let code = TunableCode {
            code: "k".into(),
            parameters: params,
            restrictions: vec![],
            grid_divisors: default_grid_divisors(),
            dynamic_shared_memory: None,
            seeds: Vec::new(),
        };
        assert!(!serde_json::to_string(&code).unwrap().contains("seeds"));
        let seeded = TunableCode {
            seeds: kept,
            ..code.clone()
        };
        assert_eq!(seeded.content_hash(), code.content_hash());
    }

    /// A 2-D kernel launched with 16 x 16 blocks.
    fn matmul_info() -> KernelInfo {
        KernelInfo {
            name: "matrixMultiply".into(),
            parameters: vec!["C".into(), "n".into(), "m".into()],
            description: "C = A * B".into(),
            problem_size: vec![
                ProblemDimension {
                    expression: "n".into(),
                },
                ProblemDimension {
                    expression: "m".into(),
                },
            ],
            outputs: vec!["C".into()],
            inputs_and_outputs: vec![],
            default_block: [16, 16, 1],
        }
    }

    #[test]
    fn original_kernel_is_launched_with_its_default_block_and_nothing_else() {
        let k = TunableCode::original("code", &matmul_info());
        assert_eq!(k.space_size(), 1);
        assert_eq!(k.parameter_names(), ["block_size_x", "block_size_y"]);
        assert_eq!(k.parameters[1].values, vec![16]);
        assert_eq!(k.grid_divisors[0], vec!["block_size_x".to_string()]);
    }

    #[test]
    fn unset_grid_divisors_keep_the_block_size_default() {
        let d = TunableCode::divisors_from(&GridDivisors {
            x: Some(vec!["block_size_x".into(), "tile_size_x".into()]),
            y: None,
            z: None,
        });
        assert_eq!(d[0].len(), 2);
        assert_eq!(d[1], vec!["block_size_y".to_string()]);
    }
}
