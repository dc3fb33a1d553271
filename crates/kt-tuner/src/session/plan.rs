//! The plan of one tuning: the space cut down by the restrictions and the device's thread limit, the first
//! test's scalars the restrictions and defines see, whether the grid can be a define, and the default launch.

use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::expr::Bindings;
use crate::model::space::{Config, SearchSpace};
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::Engine;
use crate::session::setup::TuneOptions;

/// The space to search and how its modules are built.
pub(super) struct Plan {
    pub space: SearchSpace,
    /// The first test's scalars: what the restrictions and the compile-time defines see.
    pub scalars0: Bindings,
    /// `grid_size_*` defines only when every test has the same launch, else one module per test would be
    /// needed.
    pub grid_defines: bool,
    /// The default launch.
    pub reference: Config,
}

impl Plan {
    pub(super) fn new(
        e: &Engine,
        kernel: &TunableKernel,
        tests: &[KernelTest],
    ) -> Result<Self, TunerError> {
        let first = tests
            .first()
            .ok_or_else(|| TunerError::Arguments("no tests to tune on".into()))?;
        let scalars0 = first.scalars();
        let space = SearchSpace::build_for_blocks(
            &kernel.params,
            &kernel.restrictions,
            &scalars0,
            Some(e.max_threads),
            &kernel.geometry.block_names,
        )?;
        if space.is_empty() {
            return Err(TunerError::Space(
                "no configuration satisfies the restrictions and the device's thread limit".into(),
            ));
        }
        let grid_defines = tests.iter().all(|t| {
            kernel
                .geometry
                .problem(&space.configs[0], &t.scalars())
                .ok()
                == kernel.geometry.problem(&space.configs[0], &scalars0).ok()
        });
        let reference = kernel
            .reference
            .clone()
            .unwrap_or_else(|| space.configs[0].clone());
        Ok(Plan {
            space,
            scalars0,
            grid_defines,
            reference,
        })
    }
}

/// Whether the whole space is the default launch, measured without expected outputs to verify against: then
/// the reference measurement is the search's only result.
pub(super) fn only_the_reference(plan: &Plan, options: &TuneOptions) -> bool {
    !options.verify
        && plan.space.len() == 1
        && plan.space.configs[0] == plan.reference
        && options.limits.max_evals != Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::space::TunableParam;

    fn plan(values: &[i64], reference: i64) -> Plan {
        let params = vec![TunableParam::new("block_size_x", values.to_vec())];
        Plan {
            space: SearchSpace::build(&params, &[], &Bindings::new(), None).unwrap(),
            scalars0: Bindings::new(),
            grid_defines: true,
            reference: Config::ints([("block_size_x", reference)]),
        }
    }

    #[test]
    fn only_a_space_of_the_default_launch_measured_without_verifying_skips_the_search() {
        let unverified = TuneOptions {
            verify: false,
            ..TuneOptions::default()
        };
        assert!(only_the_reference(&plan(&[256], 256), &unverified));
        // another configuration, or one other than the default, is searched
        assert!(!only_the_reference(&plan(&[128, 256], 256), &unverified));
        assert!(!only_the_reference(&plan(&[128], 256), &unverified));
        // verified runs search (the default is then checked like any configuration)
        assert!(!only_the_reference(
            &plan(&[256], 256),
            &TuneOptions::default()
        ));
    }
}
