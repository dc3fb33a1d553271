//! Stage 2's state and settings: the options a run gives, the tests accepted so far, a pending revision of
//! the generator program, and what the node needs to do its work.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use kt_cuda::Kernel;
use kt_llm::LlmClient;
use kt_sandbox::{PythonRuntime, Sandbox};
use serde::{Deserialize, Serialize};

use crate::kernel_info::KernelInfo;
use crate::prompt::PromptLibrary;

use super::reference::ReferenceRunner;

/// Run-time bounds of one test of the original kernel, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeBounds {
    pub min_ms: f64,
    pub max_ms: f64,
}

impl Default for TimeBounds {
    /// Long enough to measure above launch overhead, short enough that tuning hundreds of configs stays fast.
    fn default() -> Self {
        Self {
            min_ms: 1.0,
            max_ms: 200.0,
        }
    }
}

/// Stage 2 settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage2Options {
    /// How many tests to make.
    pub tests: usize,
    /// Test i uses seed `first_seed + i`.
    pub first_seed: u64,
    pub bounds: TimeBounds,
    /// Attempts per test for a program that fails or an answer that is refused (first attempt included).
    pub attempts: u32,
    /// Resize and tail requests in all, before Stage 2 accepts a test as it is (with a warning).
    pub max_revisions: u32,
    /// The harness refuses arguments larger than this in total.
    pub max_total_bytes: u64,
    /// Element count per array parameter, as expressions over scalars, when known (sidecar `sizes`).
    pub array_sizes: BTreeMap<String, String>,
}

impl Default for Stage2Options {
    fn default() -> Self {
        Self {
            tests: 3,
            first_seed: 1,
            bounds: TimeBounds::default(),
            attempts: 3,
            max_revisions: 4,
            max_total_bytes: 4 << 30,
            array_sizes: BTreeMap::new(),
        }
    }
}

/// One accepted test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestRecord {
    /// Content hash; also the directory name under the tests directory.
    pub id: String,
    pub dir: PathBuf,
    pub seed: u64,
    /// Evaluated (x, y, z).
    pub problem_size: Option<[i64; 3]>,
    /// Some problem-size dimension is not a multiple of 32.
    pub tail: bool,
    /// Every problem-size dimension the kernel uses is odd.
    #[serde(default)]
    pub all_odd: bool,
    /// None when no GPU ran the original kernel.
    pub reference_time_ms: Option<f64>,
    /// The directory already existed with identical content (an earlier run made the same test).
    pub reused: bool,
}

/// Why the generator must be revised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Revision {
    /// The original kernel ran outside the time bounds on this test.
    Resize {
        seed: u64,
        problem_size: Option<[i64; 3]>,
        measured_ms: f64,
    },
    /// No test so far has a size that is not a multiple of 32, or none has every dimension odd.
    Tail {
        seed: u64,
        problem_size: Option<[i64; 3]>,
    },
}

kt_graph::state! {
    /// Stage 2's state. `feedback` is only written by the retry handler (attempt-local).
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct Stage2State => Stage2Update {
        #[overwrite] pub source: String,
        #[overwrite] pub kernel: Option<Kernel>,
        #[overwrite] pub info: Option<KernelInfo>,
        #[overwrite] pub script: Option<String>,
        #[overwrite] pub revision: Option<Revision>,
        #[overwrite] pub revisions: u32,
        #[overwrite] pub feedback: Vec<String>,
        #[append] pub tests: Vec<TestRecord>,
        #[append] pub warnings: Vec<String>,
    }
}

/// What Stage 2's node needs.
#[derive(Clone)]
pub struct Stage2Deps {
    /// None: the program in the initial state (`--script`) is used as it is, and nothing is asked.
    pub llm: Option<LlmClient>,
    pub prompts: Arc<PromptLibrary>,
    pub sandbox: Sandbox,
    pub python: PythonRuntime,
    pub reference: Arc<dyn ReferenceRunner>,
    /// Where test directories are written.
    pub tests_dir: PathBuf,
    pub options: Stage2Options,
}
