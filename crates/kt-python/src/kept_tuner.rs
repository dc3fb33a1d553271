//! One tuner kept for the life of the Python process. Starting kt's worker (an interpreter loading this
//! module, then a CUDA context) costs about a fifth of a second; a Kernel Tuner script calls `run_kernel` or
//! `tune_kernel` many times (one `run_kernel` per parameterized test), and Kernel Tuner itself keeps one
//! context per process. So the tuner, with its worker and its compiled modules, is kept between calls with
//! the same worker command, environment and cache, and handed back at exit (`release`, from Python's
//! `atexit`).
//!
//! A call that ends in an error gives its tuner up (the next call starts a fresh worker), so does a call whose
//! arrays are large (the worker would hold them on the GPU until the next call: a script's own GPU work after
//! tuning should find that memory free), and a forked child never uses its parent's tuner: the worker's pipes
//! belong to the parent.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::PyResult;

use kt_tuner::TestSet;
use kt_tuner::session::Tuner;

/// Arrays of more bytes than this (all tests together) are not kept on the GPU between calls: the worker is
/// shut down after the call. Starting another costs a fifth of a second, less than uploading that much again.
pub const KEEP_AT_MOST_BYTES: u64 = 256 << 20;

/// Whether a call on `tests` may leave its worker, and so its arrays, on the GPU for the next call.
pub fn small_enough_to_keep(tests: &TestSet) -> bool {
    let bytes: u64 = tests.tests.iter().map(|t| t.array_bytes()).sum();
    bytes <= KEEP_AT_MOST_BYTES
}

/// What a kept tuner was started with: a call asking for anything else starts its own.
#[derive(Debug, Clone, PartialEq)]
pub struct TunerKey {
    pub worker: Vec<String>,
    pub worker_env: Vec<(String, String)>,
    pub cache_dir: Option<PathBuf>,
}

struct Kept {
    key: TunerKey,
    /// The process that started the worker (a fork's child has the same memory but not the worker).
    pid: u32,
    tuner: Tuner,
}

static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

fn slot() -> std::sync::MutexGuard<'static, Option<Kept>> {
    KEPT.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` with the kept tuner for `key`, started with `start` when there is none (or it was started for
/// another key), and keeps it for the next call when `f` succeeds and `keep` says so.
pub fn with_tuner<T>(
    key: TunerKey,
    keep: bool,
    start: impl FnOnce(&TunerKey) -> PyResult<Tuner>,
    f: impl FnOnce(&mut Tuner) -> PyResult<T>,
) -> PyResult<T> {
    let taken = slot().take();
    let mut tuner = match taken {
        Some(kept) if kept.pid != std::process::id() => {
            // dropping it would shut down the parent's worker through pipes this child shares
            std::mem::forget(kept);
            start(&key)?
        }
        Some(kept) if kept.key == key => kept.tuner,
        _ => start(&key)?,
    };
    let outcome = f(&mut tuner);
    if outcome.is_ok() && keep {
        *slot() = Some(Kept {
            key,
            pid: std::process::id(),
            tuner,
        });
    }
    outcome
}

/// Shuts the kept worker down (at the interpreter's exit): its CUDA context is released in order rather
/// than by the worker noticing that its parent is gone.
pub fn release() {
    let taken = slot().take();
    match taken {
        Some(kept) if kept.pid != std::process::id() => std::mem::forget(kept),
        other => drop(other),
    }
}

/// Whether a tuner is kept now (for tests).
pub fn is_kept() -> bool {
    slot().as_ref().is_some_and(|k| k.pid == std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_by_any_part() {
        let key = TunerKey {
            worker: vec!["python3".into()],
            worker_env: vec![],
            cache_dir: None,
        };
        let mut other = key.clone();
        assert_eq!(key, other);
        other.cache_dir = Some(PathBuf::from("/tmp/elsewhere"));
        assert_ne!(key, other);
        let mut env = key.clone();
        env.worker_env
            .push(("KT_TUNER_FAKE_WORKER".into(), "1".into()));
        assert_ne!(key, env);
    }

    fn one_array(elements: u64) -> TestSet {
        use kt_tuner::{ArrayArg, ArraySource, KernelTest, TestArg};
        let array = ArrayArg {
            name: "a".into(),
            dtype: kt_record::DType::Float32,
            lanes: 1,
            elements,
            source: ArraySource::Npy {
                path: PathBuf::from("a.npy"),
                offset: 0,
            },
            is_output: true,
            expected: None,
        };
        TestSet {
            tests: vec![KernelTest {
                id: "arguments".into(),
                args: vec![TestArg::Array(array)],
                tolerances: Default::default(),
                constants: Vec::new(),
            }],
        }
    }

    #[test]
    fn large_arrays_are_not_left_on_the_gpu_between_calls() {
        assert!(small_enough_to_keep(&one_array(1 << 20)));
        assert!(small_enough_to_keep(&one_array(KEEP_AT_MOST_BYTES / 4)));
        assert!(!small_enough_to_keep(&one_array(
            KEEP_AT_MOST_BYTES / 4 + 1
        )));
    }

    #[test]
    fn nothing_is_kept_before_a_call_and_release_is_harmless() {
        release();
        assert!(!is_kept());
        release();
        assert!(!is_kept());
    }
}
