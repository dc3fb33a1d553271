//! Finds the Python interpreter as `kt transform` does (`PythonRuntime::find_or_provision`, with kt's probe
//! cache unless `KT_PYTHON_PROBE_CACHE=off`) and prints how long that took and what it found, as one line:
//! `<milliseconds> <interpreter> numpy <version>`. experiments/python-probe/bench.sh times it both ways.

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let start = Instant::now();
    match kt_sandbox::PythonRuntime::find_or_provision() {
        Ok(runtime) => {
            println!(
                "{:.1} {} numpy {}",
                start.elapsed().as_secs_f64() * 1e3,
                runtime.interpreter.display(),
                runtime.numpy_version
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
