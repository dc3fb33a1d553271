//! The space `kt tune` searches: the parameters the user names (else block sizes for the problem's
//! dimensions), the template parameters the file's own launches instantiate, the restrictions the user gives
//! and those kt reads from the code; counted after restrictions without a GPU.

use std::collections::BTreeMap;

use crate::error::TunerError;
use crate::input::derived::{Derived, derive_with_fixed};
use crate::input::suite::default_block_space;
use crate::model::args::TestSet;
use crate::model::space::{Config, Restriction, SearchSpace, TunableParam};
use crate::session::config_from_block;

use super::{LoadedKernel, from_instances};

/// What the user asked to tune.
#[derive(Debug, Clone, Default)]
pub struct SpaceRequest {
    /// `--param NAME=V1,V2,..`; empty: block sizes are tuned.
    pub params: Vec<TunableParam>,
    /// `--template NAME=VALUE`.
    pub templates: BTreeMap<String, String>,
    /// `--restrict EXPR`.
    pub restrictions: Vec<String>,
    /// Add the restrictions kt reads from the code.
    pub derive: bool,
}

/// The space set on a kernel, with what was decided on the user's behalf.
#[derive(Debug, Clone)]
pub struct TuneSpace {
    /// Every value combination (before restrictions), with the default launch.
    pub configs: Vec<Config>,
    /// Restrictions and parameters read from the code.
    pub derived: Derived,
    /// A line each for a template parameter taken from the file's own launches.
    pub instance_lines: Vec<String>,
}

/// Most threads per block of every current NVIDIA GPU: the count of a space before a device is asked.
const MAX_THREADS_PER_BLOCK: u64 = 1024;

impl TuneSpace {
    /// Sets the space of `request` on `loaded`: parameters, restrictions, template arguments, the default
    /// launch as the reference configuration, arrays sized per configuration.
    pub fn set(loaded: &mut LoadedKernel, request: SpaceRequest) -> Result<Self, TunerError> {
        if loaded.kernel.geometry.problem_size.is_empty() {
            return Err(TunerError::NoProblemSize);
        }
        let SpaceRequest {
            mut params,
            mut templates,
            mut restrictions,
            derive: derive_restrictions,
        } = request;
        let instances = from_instances(
            &loaded.kernel.kernel_name,
            &loaded.template_params(),
            &loaded.instantiations,
            &params,
            &templates,
        );
        templates.extend(instances.fixed);
        if params.is_empty() {
            let (p, r) = default_block_space(loaded.dims);
            params = p;
            restrictions.extend(r);
        }
        params.extend(instances.tuned);
        let derived = if derive_restrictions {
            derive_with_fixed(&loaded.parsed, &params, &templates)
        } else {
            Derived::default()
        };
        params.extend(derived.added_params.iter().cloned());
        restrictions.extend(derived.restrictions.iter().map(|r| r.expr.clone()));
        loaded.kernel.reference = loaded.default_block.map(|b| {
            let mut reference = config_from_block(&params, b);
            derived.align_reference(&mut reference);
            reference
        });
        loaded.set_template_args(&params, &templates)?;
        loaded.size_arrays_per_configuration();
        let configs =
            crate::model::space::every_config(&params, loaded.kernel.reference.as_slice());
        loaded.kernel.params = params;
        loaded.kernel.restrictions = restrictions.into_iter().map(Restriction::Expr).collect();
        Ok(TuneSpace {
            configs,
            derived,
            instance_lines: instances.lines,
        })
    }

    /// When the restrictions leave nothing: the default launch (the file's own, or the sidecar's) as the
    /// only configuration, without restrictions, so that a kernel whose own launch works still gets a
    /// result. None when there is no default launch. The line says what was done and why.
    pub fn only_the_default_launch(
        loaded: &mut LoadedKernel,
        combinations: usize,
    ) -> Option<String> {
        let reference = loaded.kernel.reference.clone()?;
        let mut params: Vec<TunableParam> = reference
            .0
            .iter()
            .map(|(n, v)| TunableParam::new(n.clone(), [v.clone()]))
            .collect();
        for p in &loaded.kernel.params {
            if !params.iter().any(|q| q.name == p.name)
                && let Some(first) = p.values.first()
            {
                params.push(TunableParam::new(p.name.clone(), [first.clone()]));
            }
        }
        let dropped: Vec<String> = loaded
            .kernel
            .restrictions
            .iter()
            .map(|r| match r {
                Restriction::Expr(e) => e.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        loaded.kernel.params = params;
        loaded.kernel.restrictions.clear();
        Some(format!(
            "the restrictions ({}) leave none of the {combinations} configurations: tuning the default launch \
             alone ({reference}) so that the kernel still gets a result; give --param values (or \
             --no-derived-restrictions) to search a space",
            dropped.join("; ")
        ))
    }

    /// The configurations left after the restrictions, bound to the scalars of the first test: a
    /// restriction naming something that is neither a parameter nor a scalar is an error here, before a
    /// GPU is asked for.
    pub fn after_restrictions(
        loaded: &LoadedKernel,
        tests: &TestSet,
    ) -> Result<SearchSpace, TunerError> {
        let scalars = tests.tests.first().map(|t| t.scalars()).unwrap_or_default();
        SearchSpace::build(
            &loaded.kernel.params,
            &loaded.kernel.restrictions,
            &scalars,
            Some(MAX_THREADS_PER_BLOCK),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{TestSource, load_kernel, load_tests};
    use crate::model::args::SizeChoice;
    use std::path::Path;

    fn matmul() -> LoadedKernel {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels/matmul.cu");
        load_kernel(&file, None, &[]).unwrap()
    }

    fn tests_of(loaded: &LoadedKernel, configs: &[Config]) -> TestSet {
        let source = TestSource::Generate {
            size: SizeChoice::Test,
            count: 1,
        };
        load_tests(loaded, source, &BTreeMap::new(), configs).unwrap()
    }

    #[test]
    fn a_restriction_narrows_the_counted_space() {
        let mut loaded = matmul();
        let request = SpaceRequest {
            params: vec![
                TunableParam::new("block_size_x", [8, 16, 32]),
                TunableParam::new("block_size_y", [8, 16, 32]),
            ],
            restrictions: vec!["block_size_x * block_size_y <= 256".into()],
            ..SpaceRequest::default()
        };
        let space = TuneSpace::set(&mut loaded, request).unwrap();
        let tests = tests_of(&loaded, &space.configs);
        let counted = TuneSpace::after_restrictions(&loaded, &tests).unwrap();
        // 9 combinations; 16x32, 32x16 and 32x32 exceed 256 threads
        assert_eq!(counted.len(), 6);
    }

    #[test]
    fn a_restriction_on_an_unknown_name_is_refused_before_any_gpu() {
        let mut loaded = matmul();
        let request = SpaceRequest {
            restrictions: vec!["nosuch > 4".into()],
            ..SpaceRequest::default()
        };
        let space = TuneSpace::set(&mut loaded, request).unwrap();
        let tests = tests_of(&loaded, &space.configs);
        let err = TuneSpace::after_restrictions(&loaded, &tests).unwrap_err();
        assert!(err.to_string().contains("nosuch"), "{err}");
    }

    #[test]
    fn without_parameters_the_block_sizes_of_the_problems_dimensions_are_tuned() {
        let mut loaded = matmul();
        TuneSpace::set(&mut loaded, SpaceRequest::default()).unwrap();
        let names: Vec<&str> = loaded
            .kernel
            .params
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["block_size_x", "block_size_y"]);
        assert_eq!(loaded.kernel.restrictions.len(), 1);
    }

    #[test]
    fn an_empty_space_falls_back_to_the_default_launch_alone() {
        let mut loaded = matmul();
        let request = SpaceRequest {
            params: vec![TunableParam::new("block_size_x", [8, 32])],
            restrictions: vec!["block_size_x == 64".into()],
            ..SpaceRequest::default()
        };
        let space = TuneSpace::set(&mut loaded, request).unwrap();
        let tests = tests_of(&loaded, &space.configs);
        assert_eq!(
            TuneSpace::after_restrictions(&loaded, &tests)
                .unwrap()
                .len(),
            0
        );
        let line = TuneSpace::only_the_default_launch(&mut loaded, 2).unwrap();
        assert!(
            line.contains("block_size_x == 64") && line.contains("none of the 2"),
            "{line}"
        );
        let left = TuneSpace::after_restrictions(&loaded, &tests).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(Some(&left.configs[0]), loaded.kernel.reference.as_ref());
        loaded.kernel.reference = None;
        assert!(TuneSpace::only_the_default_launch(&mut loaded, 2).is_none());
    }

    #[test]
    fn a_kernel_without_a_problem_size_is_refused() {
        let mut loaded = matmul();
        loaded.kernel.geometry.problem_size.clear();
        let err = TuneSpace::set(&mut loaded, SpaceRequest::default()).unwrap_err();
        assert!(matches!(err, TunerError::NoProblemSize), "{err}");
    }
}
