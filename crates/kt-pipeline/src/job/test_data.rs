//! A resumed run's test data on the machine it continues on: tests travel as manifests and generator
//! programs, and what is missing here is made again before Stage 3 reads it (`stage2::remake`).

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;
use crate::prepare::TestgenSettings;
use crate::stage2::{Remade, data_missing, remake_missing_data};
use kt_record::RunDir;

/// Whether the run's tests lack data their manifests name (arrays or expected outputs).
pub fn test_data_missing(run: &RunDir) -> bool {
    run.tests_dir().is_dir() && data_missing(&run.tests_dir())
}

/// Makes the run's missing test data again with `testgen`'s sandbox and Python (its LLM is not used).
pub fn remake_test_data(run: &RunDir, testgen: &TestgenSettings) -> Result<Remade, PipelineError> {
    let info = KernelInfo::load(run).map_err(|e| PipelineError::Graph {
        stage: "stage 1",
        message: format!(
            "this run has no finished Stage 1 ({e}); start a new run with `kt transform`"
        ),
    })?;
    let source = run.kernel_code()?;
    let parsed = kt_cuda::parse(&source)?;
    let kernel = parsed.select_kernel(Some(&info.name))?.clone();
    remake_missing_data(
        &run.tests_dir(),
        &kernel,
        &info,
        &testgen.options,
        &testgen.sandbox,
        &testgen.python,
    )
}
