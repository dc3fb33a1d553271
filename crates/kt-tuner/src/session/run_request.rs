//! What one launch request holds: a test's arguments in signature order, the launch and array extents of a
//! configuration, and the dtypes kt's own kernels must cover for a test. Built by the session, sent to the
//! worker by `worker_link`.

use kt_record::DType;

use crate::compile::device_kernels;
use crate::error::TunerError;
use crate::model::args::{KernelTest, TestArg};
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
use crate::worker::protocol::{LaunchArg, RunRequest};

/// The arguments of a test's launch, in signature order.
fn launch_args(test: &KernelTest) -> Vec<LaunchArg> {
    test.args
        .iter()
        .map(|a| match a {
            TestArg::Array(x) => LaunchArg::Array(x.name.clone()),
            TestArg::Scalar(s) => LaunchArg::Scalar(s.bytes.clone()),
        })
        .collect()
}

/// An untimed, unverified run of `kernel` at `config` on `test` (module `module`): its arguments, launch
/// and the extents of arrays sized per configuration. Callers set `verify`, `timing` and `best`.
pub(crate) fn run_request(
    module: &str,
    kernel: &TunableKernel,
    config: &Config,
    test: &KernelTest,
) -> Result<RunRequest, TunerError> {
    let scalars = test.scalars();
    let lanes = |name: &str| {
        test.arrays()
            .find(|a| a.name == name)
            .map(|a| a.lanes)
            .unwrap_or(1)
    };
    let args = match &kernel.arguments {
        None => launch_args(test),
        Some(bindings) => {
            let env = kernel.geometry.bindings(config, &scalars);
            bindings
                .iter()
                .map(|b| b.resolve(test, &env))
                .collect::<Result<_, _>>()?
        }
    };
    Ok(RunRequest {
        module: module.to_string(),
        test: test.id.clone(),
        args,
        dims: kernel.geometry.launch(config, &scalars)?,
        verify: false,
        timing: None,
        best: None,
        extents: kernel.geometry.extents(config, &scalars, lanes)?,
    })
}

/// The dtypes kt's utility kernels must cover for a test.
pub(crate) fn test_dtypes(test: &KernelTest) -> Vec<DType> {
    // constants are filled by the same seeded kernels as arrays
    device_kernels::needed_dtypes(
        test.arrays()
            .map(|a| a.dtype)
            .chain(test.constants.iter().map(|c| c.dtype)),
    )
}
