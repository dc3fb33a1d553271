//! Whether the reference gives expected values on one test. `kt verify` asks before it keeps a *derived*
//! default test (varied-scalars, skewed: `crate::input::default_tests`), whose scalars or data the sidecar
//! never gave: the reference may not be defined there (an integer scalar used as a loop bound over an array
//! takes it out of bounds), and a test it fails on says nothing of the candidate. A reference that fails on
//! a test it was written for is still a reference error wherever it runs.

use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::Engine;
use crate::session::launch_time::load_alone;
use crate::session::run_request::run_request;
use crate::worker::protocol::RunOutcome;

/// Uploads `test` alone and runs `kernel` at `config` on it as a reference: None when it gives expected
/// values there, else why not (a launch error or fault, a write outside its arrays, a launch that does no
/// work or leaves every output unwritten). What keeps it from running at all (it does not compile or
/// load) is an error, as for any test.
pub(crate) fn failure_on(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    test: &KernelTest,
) -> Result<Option<String>, TunerError> {
    let key = load_alone(e, kernel, config, test)?;
    let run = run_request(&key, kernel, config, test)?;
    match e.link.reference(run, &mut e.queue) {
        Ok(o) => Ok(writes_nothing(test, &o)),
        Err(TunerError::Reference { reason, .. }) => Ok(Some(reason)),
        Err(TunerError::ReferenceFault { reason, .. }) => Ok(Some(format!("it faulted: {reason}"))),
        Err(other) => Err(other),
    }
}

/// Why a reference run that left every output of `test` unwritten gives no expected values.
fn writes_nothing(test: &KernelTest, o: &RunOutcome) -> Option<String> {
    let outputs: Vec<&str> = test
        .arrays()
        .filter(|a| a.is_output)
        .map(|a| a.name.as_str())
        .collect();
    let all = !outputs.is_empty()
        && outputs
            .iter()
            .all(|n| o.unwritten_outputs.iter().any(|u| u == n));
    all.then(|| {
        format!(
            "it wrote no element of {} (started as poison, every output came out untouched)",
            outputs
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::args::{ArrayArg, ArraySource, Distribution, TestArg};
    use crate::worker::protocol::RunStatus;
    use kt_record::DType;

    fn array(name: &str, is_output: bool) -> TestArg {
        TestArg::Array(ArrayArg {
            name: name.into(),
            dtype: DType::Float32,
            lanes: 1,
            elements: 16,
            source: ArraySource::Generate {
                dist: Distribution::Zeros,
                seed: 1,
            },
            is_output,
            expected: None,
        })
    }

    fn two_outputs() -> KernelTest {
        KernelTest {
            id: "varied-scalars".into(),
            args: vec![array("x", false), array("y", true), array("z", true)],
            tolerances: Default::default(),
            constants: Vec::new(),
        }
    }

    #[test]
    fn a_reference_that_left_every_output_unwritten_fails_and_says_which() {
        let mut o = RunOutcome::empty(RunStatus::Ok);
        o.unwritten_outputs = vec!["y".into(), "z".into()];
        let why = writes_nothing(&two_outputs(), &o).unwrap();
        assert_eq!(
            why,
            "it wrote no element of `y`, `z` (started as poison, every output came out untouched)"
        );
    }

    #[test]
    fn one_output_written_is_enough_and_a_kernel_without_outputs_is_no_failure() {
        let mut o = RunOutcome::empty(RunStatus::Ok);
        o.unwritten_outputs = vec!["y".into()];
        assert_eq!(writes_nothing(&two_outputs(), &o), None);
        let none = KernelTest {
            args: vec![array("x", false)],
            ..two_outputs()
        };
        assert_eq!(
            writes_nothing(&none, &RunOutcome::empty(RunStatus::Ok)),
            None
        );
    }
}
