//! A reference run: the kernel at one configuration on every test, each output written as a .npy file
//! (what becomes a test's `expected/`). The worker streams outputs from the GPU to the files, so
//! gigabyte outputs never cross the protocol pipe.

use std::path::PathBuf;
use std::time::Duration;

use crate::check::measure::TimingPolicy;
use crate::error::TunerError;
use crate::model::args::{ArrayArg, ArraySource, TestSet};
use crate::model::outcome::{ReferenceOutputs, Verdict};
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::Engine;
use crate::session::run_request::{run_request, test_dtypes};
use crate::worker::protocol::{OutputFile, Request, RunRequest, RunStatus};

/// Runs `kernel` at `config` on every test and writes each output to `<out_dirs[i]>/<name>.npy`. Outputs
/// start from the test's initial contents; a second run with the outputs poisoned reports elements the
/// kernel never writes. With `timing`, the launch is also timed. The test set's own expected values play
/// no part.
pub(crate) fn run(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    tests: &TestSet,
    out_dirs: &[PathBuf],
    timing: Option<TimingPolicy>,
) -> Result<Vec<ReferenceOutputs>, TunerError> {
    record(e, kernel, config, tests, out_dirs, timing, true)
}

/// [`run`], with the poisoned second run only when `probe` (see `Request::RecordOutputs`).
pub(crate) fn record(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    tests: &TestSet,
    out_dirs: &[PathBuf],
    timing: Option<TimingPolicy>,
    probe: bool,
) -> Result<Vec<ReferenceOutputs>, TunerError> {
    let tests = &tests.tests;
    let first = tests
        .first()
        .ok_or_else(|| TunerError::Arguments("no tests to run the reference on".into()))?;
    if out_dirs.len() != tests.len() {
        return Err(TunerError::Arguments(format!(
            "{} output directories for {} tests: give one per test",
            out_dirs.len(),
            tests.len()
        )));
    }
    for t in tests {
        e.queue.submit_util(&test_dtypes(t));
    }
    let submitted = e.queue.submit(kernel, config, &first.scalars(), false)?;
    e.link.device(&mut e.queue)?;
    tracing::debug!("reference run: the worker is ready");
    e.queue.wait_required(
        &submitted,
        &kernel.kernel_name,
        &first.id,
        &format!("the kernel at {config}"),
    )?;
    tracing::debug!("reference run: the kernel is compiled");
    e.link.prepare(tests, None, &mut e.queue)?;
    tracing::debug!("reference run: the tests are uploaded");
    let key = submitted.key;
    let mut runs = Vec::new();
    for (t, dir) in tests.iter().zip(out_dirs) {
        std::fs::create_dir_all(dir).map_err(|err| TunerError::io(dir, err))?;
        // absolute: the worker has a work directory of its own
        let dir = std::fs::canonicalize(dir).map_err(|err| TunerError::io(dir, err))?;
        let mut files = Vec::new();
        let run = RunRequest {
            timing,
            ..run_request(&key, kernel, config, t)?
        };
        for a in t.arrays().filter(|a| a.is_output) {
            let extent = run.extents.iter().find(|(n, _)| n == &a.name).map(|e| e.1);
            files.push(OutputFile {
                name: a.name.clone(),
                path: dir.join(format!("{}.npy", a.name)),
                shape: array_shape(a, extent)?,
            });
        }
        let failed = |reason: String| TunerError::Reference {
            test: t.id.clone(),
            reason,
        };
        let faulted = |reason: String| TunerError::ReferenceFault {
            test: t.id.clone(),
            reason,
        };
        let o = match e.link.run(
            &key,
            Request::RecordOutputs { run, files, probe },
            Duration::from_secs(300),
            &mut e.queue,
        )? {
            Ok(o) => o,
            Err(v @ Verdict::Crashed { .. }) => return Err(faulted(v.reason())),
            Err(v) => return Err(failed(v.reason())),
        };
        match o.status {
            RunStatus::Ok => {}
            RunStatus::Invalid(m) => return Err(failed(m)),
            RunStatus::Crashed(m) => return Err(faulted(m)),
        }
        tracing::debug!(test = %t.id, "reference run: launched and recorded");
        runs.push(ReferenceOutputs {
            test_id: t.id.clone(),
            outputs: o.recorded,
            timing: o.timing,
        });
    }
    Ok(runs)
}

/// The .npy shape of an array: its file's shape, else (generated inputs) flat, with a lane dimension for
/// structs; an array sized per configuration is as long as this configuration's `extent` (elements).
fn array_shape(a: &ArrayArg, extent: Option<u64>) -> Result<Vec<u64>, TunerError> {
    if let Some(n) = extent.filter(|n| *n < a.elements) {
        return Ok(if a.lanes > 1 {
            vec![n / a.lanes as u64, a.lanes as u64]
        } else {
            vec![n]
        });
    }
    Ok(match &a.source {
        ArraySource::Npy { path, .. } => kt_record::tests_format::npy::read_header(path)?.shape,
        ArraySource::Generate { .. } if a.lanes > 1 => {
            vec![a.elements / a.lanes as u64, a.lanes as u64]
        }
        ArraySource::Generate { .. } => vec![a.elements],
    })
}
