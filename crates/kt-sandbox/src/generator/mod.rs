//! Running an LLM-written input generator through kt's harness and storing its arguments as a test directory.
//!
//! Contract for the generator (what the prompt tells the LLM): a Python module that defines
//! `def generate(seed: int) -> list`, returning the kernel's arguments in parameter order: numpy arrays for
//! pointer parameters (dtype matching the C type; a `float3*` is a float32 array whose last dimension is 3),
//! Python or numpy scalars for scalar parameters. A kernel that reads `__constant__` symbols gets their contents
//! too: `generate` then returns `{"args": [...], "constants": {name: array}}`, an array of each symbol's type
//! and declared length. Only the standard library and numpy are available; there is no
//! network, and only the working directory is writable.

mod element;
mod error;
mod output_file;
mod spec;
mod store;
mod stored_constants;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use element::{ElementType, element_type};
pub use error::GeneratorError;
pub use kt_record::tests_format::{FORMAT, ManifestArg, ManifestConstant, TestManifest};
pub use spec::{ArgSpec, CONSTANT_MEMORY_BYTES, ConstantSpec, GeneratorSpec};
pub use store::remove_stale_staging;

use crate::outcome::{Ending, Limit, Outcome};
use crate::python::PythonRuntime;
use crate::sandbox::Sandbox;

/// kt's harness, embedded so the binary carries it (written into each run's work directory).
const HARNESS: &str = include_str!("harness.py");
/// How much of a traceback or stderr goes into an error (the LLM gets the end, where the cause is).
const DETAIL_TAIL: usize = 8 * 1024;
/// result.json is written by the harness in the sandbox; kt reads at most this much of it.
const RESULT_MAX_BYTES: u64 = 4 << 20;

/// A test directory written (or found) by [`run_generator`].
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedTest {
    /// Content hash (first 16 hex digits of blake3 over the manifest's args and the array data).
    pub id: String,
    /// `dest_dir/<id>`.
    pub dir: PathBuf,
    pub manifest: TestManifest,
    /// The directory already existed with the same content (an earlier run produced identical data).
    pub reused: bool,
    /// What the generator printed (capped by the sandbox policy).
    pub stdout: String,
    pub elapsed: Duration,
}

/// The harness's verdict (out/result.json).
#[derive(Debug, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum HarnessResult {
    Ok {
        args: Vec<ManifestArg>,
        #[serde(default)]
        constants: Vec<ManifestConstant>,
        problem_size: Option<Vec<i64>>,
    },
    Error(HarnessError),
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum HarnessError {
    NumpyUnusable {
        error: String,
        traceback: String,
    },
    ImportMissing {
        module: String,
        traceback: String,
    },
    Limit {
        which: String,
        traceback: String,
    },
    NetworkDenied {
        traceback: String,
    },
    PermissionDenied {
        path: String,
        traceback: String,
    },
    Raised {
        exception: String,
        traceback: String,
    },
    BadExpression {
        what: String,
        expression: String,
        error: String,
    },
    NoGenerate {
        detail: String,
    },
    BadReturn {
        detail: String,
    },
    MissingConstants {
        names: Vec<String>,
    },
    UnknownConstant {
        name: String,
        reads: Vec<String>,
    },
    BadConstant {
        name: String,
        detail: String,
    },
    WrongArgCount {
        expected: usize,
        got: usize,
        names: Vec<String>,
    },
    WrongKind {
        param: String,
        expected: String,
        got: String,
    },
    WrongDtype {
        param: String,
        expected: String,
        got: String,
    },
    WrongSize {
        param: String,
        expected: String,
        got: String,
    },
    BadValue {
        param: String,
        detail: String,
    },
    TooLarge {
        bytes: u64,
        limit: u64,
    },
}

/// Runs `script` (the generator's source) with `seed` in `sandbox` using `python`, checks its arguments against
/// `spec`, and stores them as `dest_dir/<content-hash>/` (manifest.json + args/*.npy + constants/*.npy, without
/// expected/).
///
/// The sandbox's policy is extended with what the interpreter must read, and its file-size limit is raised to
/// fit `spec.max_total_bytes`. Every run gets a fresh work directory, deleted afterwards.
pub fn run_generator(
    sandbox: &Sandbox,
    python: &PythonRuntime,
    script: &str,
    spec: &GeneratorSpec,
    seed: u64,
    dest_dir: &Path,
) -> Result<GeneratedTest, GeneratorError> {
    let harness_spec = spec.for_harness(seed)?;
    let mut policy = sandbox.policy().clone();
    python.apply_to(&mut policy);
    // the run the tests go to (its store, its record, the tests of earlier seeds), wherever `--out` put it
    if policy.private_tmp
        && let Some(run) = std::path::absolute(dest_dir)
            .ok()
            .as_deref()
            .and_then(Path::parent)
        && run.components().count() > 2
    {
        policy = policy.hiding(run);
    }
    // np.save writes each array in one file: the file-size limit must not be what stops a legal array.
    let needed = spec.max_total_bytes.saturating_add(1 << 20);
    if let Some(limit) = policy.file_size.as_mut() {
        *limit = (*limit).max(needed);
    }
    // nor the work directory's quota: the arrays twice over (numpy may hold a temporary copy on disk)
    if let Some(quota) = policy.disk_quota.as_mut() {
        *quota = (*quota).max(needed.saturating_mul(2).saturating_add(64 << 20));
    }
    let sandbox = Sandbox::new(policy);
    let workdir = sandbox.workdir()?;
    let write = |name: &str, bytes: &[u8]| {
        let path = workdir.path().join(name);
        std::fs::write(&path, bytes).map_err(|source| GeneratorError::Io {
            what: "write",
            path,
            source,
        })
    };
    let spec_json = serde_json::to_vec(&harness_spec).map_err(|e| GeneratorError::SpecInvalid {
        detail: e.to_string(),
    })?;
    write("kt_generator.py", script.as_bytes())?;
    write("kt_harness.py", HARNESS.as_bytes())?;
    write("kt_spec.json", &spec_json)?;

    let outcome = sandbox.run_in(
        &workdir,
        &python.interpreter,
        &["-B", "kt_harness.py", "kt_spec.json"],
        None,
    )?;
    let out = workdir.path().join("out");
    let result = read_result(&out)?;
    tracing::debug!(ending = ?outcome.ending, has_result = result.is_some(), "generator run ended");

    match (outcome.ending, result) {
        (Ending::TimedOut { limit }, _) => Err(GeneratorError::TimedOut { after: limit }),
        (Ending::OutputTooLarge { limit }, _) => Err(GeneratorError::OutputTooLarge { limit }),
        (
            Ending::DiskQuotaExceeded {
                limit,
                used,
                entries,
            },
            _,
        ) => Err(GeneratorError::DiskQuota {
            limit,
            used,
            entries,
        }),
        (Ending::Crashed { signal }, _) => Err(GeneratorError::Crashed {
            signal,
            stderr: tail(&outcome.stderr_text()),
        }),
        (Ending::KilledByLimit { which }, None) => Err(GeneratorError::LimitExceeded {
            which,
            detail: tail(&outcome.stderr_text()),
        }),
        (Ending::KilledByLimit { which: Limit::Cpu }, Some(_)) => {
            Err(GeneratorError::LimitExceeded {
                which: Limit::Cpu,
                detail: tail(&outcome.stderr_text()),
            })
        }
        (_, Some(HarnessResult::Error(err))) => Err(map_harness_error(err, python)),
        (
            Ending::Finished { exit_code: 0 },
            Some(HarnessResult::Ok {
                args,
                constants,
                problem_size,
            }),
        ) => {
            let mut manifest = store::validate(spec, seed, args, problem_size, &out)?;
            manifest.constants = stored_constants::validate(spec, constants, &out)?;
            let id = store::content_id(&manifest, &out)?;
            let (dir, reused) = store::place(&manifest, &id, &out, dest_dir)?;
            Ok(GeneratedTest {
                id,
                dir,
                manifest,
                reused,
                stdout: outcome.stdout_text(),
                elapsed: outcome.elapsed,
            })
        }
        (ending, _) => Err(harness_failed(ending, &outcome)),
    }
}

fn harness_failed(ending: Ending, outcome: &Outcome) -> GeneratorError {
    let exit_code = match ending {
        Ending::Finished { exit_code } => exit_code,
        _ => -1,
    };
    GeneratorError::HarnessFailed {
        exit_code,
        stderr: tail(&outcome.stderr_text()),
    }
}

/// The harness's verdict, `None` when there is none (the program was stopped before the harness wrote it) or it
/// does not parse; a result.json that is not a regular file within the size limit is refused.
fn read_result(out: &Path) -> Result<Option<HarnessResult>, GeneratorError> {
    use std::io::Read;
    match std::fs::symlink_metadata(out.join("result.json")) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let (mut file, _) = output_file::open(out, "result.json", RESULT_MAX_BYTES)?;
    let mut text = Vec::new();
    if file.read_to_end(&mut text).is_err() {
        return Ok(None);
    }
    match serde_json::from_slice(&text) {
        Ok(result) => Ok(Some(result)),
        Err(err) => {
            tracing::warn!(%err, "the generator harness wrote an unreadable result.json");
            Ok(None)
        }
    }
}

fn map_harness_error(err: HarnessError, python: &PythonRuntime) -> GeneratorError {
    use GeneratorError as G;
    // every text in it came from the program (tracebacks go through `tail`)
    let safe = |s: String| kt_record::terminal_safe(&s).into_owned();
    match err {
        HarnessError::NumpyUnusable { error, traceback } => {
            G::Python(crate::python::PythonError::NumpyUnusable {
                python: python.interpreter.display().to_string(),
                version: python.numpy_version.clone(),
                detail: format!("{}\n{}", safe(error), tail(&traceback)),
            })
        }
        HarnessError::ImportMissing { module, traceback } => G::ImportMissing {
            module: safe(module),
            traceback: tail(&traceback),
        },
        HarnessError::Limit { which, traceback } => {
            let which = match which.as_str() {
                "memory" => Limit::Memory,
                "processes" => Limit::Processes,
                "open_files" => Limit::OpenFiles,
                "file_size" => Limit::FileSize,
                _ => Limit::Cpu,
            };
            G::LimitExceeded {
                which,
                detail: tail(&traceback),
            }
        }
        HarnessError::NetworkDenied { traceback } => G::NetworkDenied {
            traceback: tail(&traceback),
        },
        HarnessError::PermissionDenied { path, traceback } => G::PermissionDenied {
            path: safe(path),
            traceback: tail(&traceback),
        },
        HarnessError::Raised {
            exception,
            traceback,
        } => G::GeneratorRaised {
            exception: safe(exception),
            traceback: tail(&traceback),
        },
        HarnessError::BadExpression {
            what,
            expression,
            error,
        } => G::BadExpression {
            what: safe(what),
            expression: safe(expression),
            error: safe(error),
        },
        HarnessError::NoGenerate { detail } => G::NoGenerateFunction {
            detail: safe(detail),
        },
        HarnessError::BadReturn { detail } => G::BadReturn {
            detail: safe(detail),
        },
        HarnessError::MissingConstants { names } => G::MissingConstants {
            names: names.into_iter().map(safe).collect(),
        },
        HarnessError::UnknownConstant { name, reads } => G::UnknownConstant {
            name: safe(name),
            reads: reads.into_iter().map(safe).collect(),
        },
        HarnessError::BadConstant { name, detail } => G::BadConstant {
            name: safe(name),
            detail: safe(detail),
        },
        HarnessError::WrongArgCount {
            expected,
            got,
            names,
        } => G::WrongArgCount {
            expected,
            got,
            names,
        },
        HarnessError::WrongKind {
            param,
            expected,
            got,
        } => G::WrongKind {
            param,
            expected,
            got: safe(got),
        },
        HarnessError::WrongDtype {
            param,
            expected,
            got,
        } => G::WrongDtype {
            param,
            expected,
            got: safe(got),
        },
        HarnessError::WrongSize {
            param,
            expected,
            got,
        } => G::WrongSize {
            param,
            expected,
            got: safe(got),
        },
        HarnessError::BadValue { param, detail } => G::BadScalar {
            param,
            detail: safe(detail),
        },
        HarnessError::TooLarge { bytes, limit } => G::TooLarge { bytes, limit },
    }
}

/// The last `DETAIL_TAIL` bytes of `text`, cut at a character boundary, with control characters escaped (it
/// reaches the terminal and the LLM's prompt).
fn tail(text: &str) -> String {
    let text = kt_record::terminal_safe(text);
    if text.len() <= DETAIL_TAIL {
        return text.into_owned();
    }
    let mut start = text.len() - DETAIL_TAIL;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod constants_tests;
