//! The Stage 2 graph: one node, `make_test`, looping until the wanted number of tests is accepted.
//!
//! One invocation makes test number `tests.len()` with seed `first_seed + index`:
//! 1. the generator program: asked of the LLM when there is none yet, a revision is pending, or the previous
//!    attempt failed (then with the failing program and the error verbatim); otherwise the last one is reused;
//! 2. the program runs in kt-sandbox's harness (argument count, dtypes, sizes, total-bytes limit), which writes
//!    a content-addressed test directory;
//! 3. the tests must include one whose size is not a multiple of 32 (tail bugs) and one whose every size
//!    dimension is odd (tile assumptions: a kernel that only works for even or tile-multiple sizes); the last
//!    test is sent back for revision until they do, and a dimension that is a multiple of the same power of
//!    two in every test is a warning;
//! 4. the original kernel runs on it (when a GPU is available): expected outputs and time are recorded, and a
//!    time outside the bounds asks the LLM to resize, with the measured time;
//! 5. the test is accepted.
//!
//! A failing program or refused answer is a node error whose retry handler appends the message to `feedback`
//! (bounded attempts). A resize or tail request is not an error: the node returns a pending `revision` and
//! the router sends it round again (bounded by `max_revisions`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kt_cuda::Kernel;
use kt_graph::{END, GraphBuilder, NodeContext, Retry, START};
use kt_llm::{LlmClient, LlmRequest};
use kt_sandbox::generator::{ArgSpec, GeneratorError, GeneratorSpec, TestManifest};
use kt_sandbox::{PythonRuntime, Sandbox};
use serde::{Deserialize, Serialize};

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;
use crate::prompt::PromptLibrary;
use crate::stage1::graph::PromptKernel;

use super::answers::{ANSWER, GeneratorScript};
use super::reference::{ReferenceJob, ReferenceRunner, record_in_manifest};

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

/// Builds the Stage 2 graph.
pub fn build(deps: Stage2Deps) -> Result<kt_graph::CompiledGraph<Stage2State>, PipelineError> {
    let wanted = deps.options.tests;
    let attempts = if deps.llm.is_some() {
        deps.options.attempts
    } else {
        1
    };
    let mut g = GraphBuilder::<Stage2State>::new();
    g.node("make_test", MakeTest { deps })
        .retry(generator_retry(attempts));
    g.edge(START, "make_test");
    g.route("make_test", &["make_test", END], move |s: &Stage2State| {
        if s.tests.len() >= wanted {
            END
        } else {
            "make_test"
        }
    });
    g.compile().map_err(|e| PipelineError::Graph {
        stage: "stage 2",
        message: e.to_string(),
    })
}

fn generator_retry(attempts: u32) -> Retry<Stage2State, PipelineError> {
    Retry::up_to(attempts)
        .backoff(Duration::ZERO, 1.0, Duration::ZERO)
        .jitter(0.0)
        .no_retry_on_timeout()
        .retry_if(|e| matches!(e, PipelineError::GeneratorRefused { .. }))
        .before_retry(
            |e| matches!(e, PipelineError::GeneratorRefused { .. }),
            |e, s: &mut Stage2State| {
                if let PipelineError::GeneratorRefused { reason, script, .. } = e {
                    s.feedback.push(reason.clone());
                    if script.is_some() {
                        s.script = script.clone();
                    }
                }
            },
        )
}

/// The generator spec of a kernel: its parameters in order, outputs and problem size from Stage 1.
pub fn generator_spec(
    kernel: &Kernel,
    info: &KernelInfo,
    options: &Stage2Options,
) -> GeneratorSpec {
    GeneratorSpec {
        kernel: kernel.name.clone(),
        params: kernel
            .params
            .iter()
            .map(|p| ArgSpec {
                name: p.name.clone(),
                base_type: p.base_type.clone(),
                pointer_depth: if p.is_pointer() {
                    p.pointer_depth.max(1)
                } else {
                    0
                },
                size: options.array_sizes.get(&p.name).cloned(),
            })
            .collect(),
        outputs: info.outputs.clone(),
        problem_size: Some(
            info.problem_size
                .iter()
                .map(|d| d.expression.clone())
                .collect(),
        ),
        max_total_bytes: options.max_total_bytes,
    }
}

/// Whether every dimension the kernel uses is odd.
pub fn all_odd(problem_size: &[i64; 3], dimensions: usize) -> bool {
    problem_size
        .iter()
        .take(dimensions.clamp(1, 3))
        .all(|d| d % 2 != 0)
}

/// The largest power of two (2 to 64) that divides a dimension's size in every test, per dimension the
/// kernel uses: `(dimension index, power)`. Tiles of that width would never meet a partial tile.
pub fn shared_powers_of_two(sizes: &[[i64; 3]], dimensions: usize) -> Vec<(usize, i64)> {
    if sizes.is_empty() {
        return Vec::new();
    }
    (0..dimensions.clamp(1, 3))
        .filter_map(|d| {
            let power = [64, 32, 16, 8, 4, 2]
                .into_iter()
                .find(|p| sizes.iter().all(|s| s[d] % p == 0))?;
            Some((d, power))
        })
        .collect()
}

/// Whether a dimension the kernel uses is not a multiple of 32 (then also not of 64).
pub fn has_tail(problem_size: &[i64; 3], dimensions: usize) -> bool {
    problem_size
        .iter()
        .take(dimensions.clamp(1, 3))
        .any(|d| d % 32 != 0)
}

struct MakeTest {
    deps: Stage2Deps,
}

#[derive(Serialize)]
struct ArraySize<'a> {
    name: &'a str,
    size: &'a str,
}

#[derive(Serialize)]
struct GeneratorContext<'a> {
    kernel: PromptKernel<'a>,
    info: &'a KernelInfo,
    array_sizes: Vec<ArraySize<'a>>,
    /// Milliseconds as Rust prints them (`1`, `0.5`), not minijinja's `1.0`.
    min_ms: String,
    max_ms: String,
    max_total_mb: u64,
    previous_script: Option<&'a str>,
    seed: u64,
    problem_size: Option<String>,
    measured_ms: Option<String>,
    errors: &'a [String],
}

/// What the generator effect journals (the files themselves are on disk under their content hash).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Generated {
    id: String,
    dir: PathBuf,
    manifest: TestManifest,
    reused: bool,
}

impl kt_graph::Node<Stage2State> for MakeTest {
    type Error = PipelineError;

    fn run(
        &self,
        state: Arc<Stage2State>,
        ctx: NodeContext,
    ) -> impl std::future::Future<Output = Result<Stage2Update, PipelineError>> + Send {
        let deps = self.deps.clone();
        async move { make_test(&deps, &state, &ctx).await }
    }
}

fn missing(what: &str) -> PipelineError {
    PipelineError::Graph {
        stage: "stage 2",
        message: format!("the initial state has no {what}"),
    }
}

async fn make_test(
    deps: &Stage2Deps,
    state: &Stage2State,
    ctx: &NodeContext,
) -> Result<Stage2Update, PipelineError> {
    let kernel = state.kernel.as_ref().ok_or_else(|| missing("kernel"))?;
    let info = state.info.as_ref().ok_or_else(|| missing("KernelInfo"))?;
    let opts = &deps.options;
    let index = state.tests.len();
    // Wrapping: a user seed near u64::MAX must not panic.
    let seed = opts.first_seed.wrapping_add(index as u64);

    // 1. The program.
    let needs_llm =
        state.script.is_none() || state.revision.is_some() || !state.feedback.is_empty();
    let script = match (&deps.llm, needs_llm) {
        (Some(llm), true) => ask_for_script(deps, llm, state, kernel, info, seed, ctx).await?,
        (_, _) => state
            .script
            .clone()
            .ok_or_else(|| missing("generator program and no LLM to write one"))?,
    };
    let refused = |reason: String| PipelineError::GeneratorRefused {
        node: "stage2.make_test".into(),
        reason,
        script: Some(script.clone()),
    };

    // 2. Run it in the sandbox.
    let spec = generator_spec(kernel, info, opts);
    let generated = run_generator(deps, ctx, &script, &spec, seed)
        .await
        .map_err(|e| match e {
            GeneratorError::Io { .. }
            | GeneratorError::Sandbox(_)
            | GeneratorError::Python(_)
            | GeneratorError::SpecInvalid { .. } => e.into(),
            e if deps.llm.is_some() && e.is_generator_fault() => {
                refused(format!("with seed {seed} the program failed: {e}"))
            }
            e => e.into(),
        })?;
    let fresh = !generated.reused;
    let discard = || {
        if fresh {
            let _ = std::fs::remove_dir_all(&generated.dir);
        }
    };
    if let Some(earlier) = state.tests.iter().find(|t| t.id == generated.id) {
        discard();
        return Err(refused(format!(
            "seeds {} and {seed} produced identical arguments; draw every random value from np.random.default_rng(seed) \
             and let the sizes depend on the seed",
            earlier.seed
        )));
    }

    // 3. Problem size and the tail rule.
    let dims = info.dimensions();
    let ps = generated.manifest.problem_size;
    if let Some(p) = ps
        && p.iter().take(dims).any(|d| *d <= 0)
    {
        discard();
        return Err(refused(format!(
            "the problem size evaluates to {p:?}; every dimension must be at least 1"
        )));
    }
    let tail = ps.is_some_and(|p| has_tail(&p, dims));
    let odd = ps.is_some_and(|p| all_odd(&p, dims));
    let mut warnings = Vec::new();
    let last = index + 1 >= opts.tests;
    let tail_missing = !tail && !state.tests.iter().any(|t| t.tail);
    let odd_missing = ps.is_some() && !odd && !state.tests.iter().any(|t| t.all_odd);
    if last && (tail_missing || odd_missing) {
        if deps.llm.is_some() && state.revisions < opts.max_revisions {
            discard();
            ctx.emit(
                "tail_requested",
                serde_json::json!({ "seed": seed, "problem_size": ps }),
            );
            return Ok(Stage2Update::default()
                .script(Some(script.clone()))
                .revision(Some(Revision::Tail {
                    seed,
                    problem_size: ps,
                }))
                .revisions(state.revisions + 1));
        }
        if tail_missing {
            warnings.push(format!(
                "no test has a problem size that is not a multiple of 32 (last: {ps:?}); boundary handling is untested"
            ));
        }
        if odd_missing {
            warnings.push(format!(
                "no test has every problem-size dimension odd (last: {ps:?}); kernels that assume even or \
                 tile-multiple sizes may pass"
            ));
        }
    }
    if last {
        let sizes: Vec<[i64; 3]> = state
            .tests
            .iter()
            .filter_map(|t| t.problem_size)
            .chain(ps)
            .collect();
        for (d, power) in shared_powers_of_two(&sizes, dims) {
            warnings.push(format!(
                "problem-size dimension {} is a multiple of {power} in every test; a kernel that assumes tiles of \
                 {power} would pass them all",
                ["x", "y", "z"][d]
            ));
        }
    }

    // 4. The original kernel on it.
    let mut reference_time_ms = None;
    if deps.reference.availability().is_ok() {
        let run = run_reference(deps, ctx, &state.source, kernel, info, &generated).await.map_err(|e| match e {
            PipelineError::Reference { inputs_at_fault: true, test, message } if deps.llm.is_some() => {
                refused(format!("the original kernel failed on the arguments of seed {seed} (test {test}): {message}"))
            }
            other => other,
        })?;
        record_in_manifest(&generated.dir, &run)?;
        let b = opts.bounds;
        if run.time_ms < b.min_ms || run.time_ms > b.max_ms {
            if deps.llm.is_some() && state.revisions < opts.max_revisions {
                discard();
                ctx.emit(
                    "resize_requested",
                    serde_json::json!({ "seed": seed, "measured_ms": run.time_ms }),
                );
                return Ok(Stage2Update::default()
                    .script(Some(script.clone()))
                    .revision(Some(Revision::Resize {
                        seed,
                        problem_size: ps,
                        measured_ms: run.time_ms,
                    }))
                    .revisions(state.revisions + 1));
            }
            warnings.push(format!(
                "test {} (seed {seed}) runs {:.3} ms, outside [{}, {}] ms; kept because no more resizes are allowed",
                generated.id, run.time_ms, b.min_ms, b.max_ms
            ));
        }
        reference_time_ms = Some(run.time_ms);
    }

    // 5. Accepted. The program is kept beside the test, so the test can be remade or audited.
    crate::run_dir::write_file(&generated.dir.join("generator.py"), script.as_bytes())?;
    let record = TestRecord {
        id: generated.id.clone(),
        dir: generated.dir.clone(),
        seed,
        problem_size: ps,
        tail,
        all_odd: odd,
        reference_time_ms,
        reused: generated.reused,
    };
    tracing::info!(test = %record.id, seed, problem_size = ?ps, time_ms = ?reference_time_ms, "test accepted");
    Ok(Stage2Update::default()
        .script(Some(script))
        .revision(None)
        .tests(vec![record])
        .warnings(warnings))
}

async fn ask_for_script(
    deps: &Stage2Deps,
    llm: &LlmClient,
    state: &Stage2State,
    kernel: &Kernel,
    info: &KernelInfo,
    seed: u64,
    ctx: &NodeContext,
) -> Result<String, PipelineError> {
    let (template, label) = match &state.revision {
        Some(Revision::Resize { .. }) => ("stage2-resize", "stage2.resize"),
        Some(Revision::Tail { .. }) => ("stage2-tail", "stage2.tail"),
        None => ("stage2-generator", "stage2.generator"),
    };
    let (problem_size, measured_ms) = match &state.revision {
        Some(Revision::Resize {
            problem_size,
            measured_ms,
            ..
        }) => (
            problem_size.map(|p| format!("{p:?}")),
            Some(format!("{measured_ms:.3}")),
        ),
        Some(Revision::Tail { problem_size, .. }) => (problem_size.map(|p| format!("{p:?}")), None),
        None => (None, None),
    };
    let context = GeneratorContext {
        kernel: PromptKernel::new(kernel, &state.source),
        info,
        array_sizes: deps
            .options
            .array_sizes
            .iter()
            .map(|(name, size)| ArraySize { name, size })
            .collect(),
        min_ms: deps.options.bounds.min_ms.to_string(),
        max_ms: deps.options.bounds.max_ms.to_string(),
        max_total_mb: deps.options.max_total_bytes >> 20,
        previous_script: state.script.as_deref(),
        seed,
        problem_size,
        measured_ms,
        errors: &state.feedback,
    };
    let prompt = deps.prompts.render_as(template, ANSWER, &context)?;
    tracing::debug!(node = label, template_hash = %prompt.template_hash, text_hash = %prompt.text_hash, "asking");
    // Which template (and which exact text) produced the call, for the run's event stream.
    ctx.emit("prompt", serde_json::json!({ "node": label, "template": prompt.name, "template_hash": prompt.template_hash, "text_hash": prompt.text_hash }));
    let request = LlmRequest::new(label).user(prompt.text);
    let llm = llm.clone();
    let text: String = ctx
        .effect("llm", || async move {
            llm.complete(request).await.map(|r| r.text)
        })
        .await
        .map_err(|e| match e {
            kt_graph::EffectError::Failed { source, .. } => {
                crate::graph_run::llm_failure(ctx, label, source)
            }
            kt_graph::EffectError::Journal { source, .. } => PipelineError::Graph {
                stage: "stage 2",
                message: source.to_string(),
            },
        })?;
    GeneratorScript::from_answer(&text)
        .map(|s| s.code)
        .map_err(|reason| PipelineError::GeneratorRefused {
            node: label.into(),
            reason,
            script: state.script.clone(),
        })
}

async fn run_generator(
    deps: &Stage2Deps,
    ctx: &NodeContext,
    script: &str,
    spec: &GeneratorSpec,
    seed: u64,
) -> Result<Generated, GeneratorError> {
    let (sandbox, python, script, spec, dest) = (
        deps.sandbox.clone(),
        deps.python.clone(),
        script.to_string(),
        spec.clone(),
        deps.tests_dir.clone(),
    );
    let key = format!(
        "seed{seed}-{}",
        &blake3::hash(script.as_bytes()).to_hex()[..16]
    );
    ctx.effect_keyed("generator", &key, || async move {
        let dest_for_error = dest.clone();
        tokio::task::spawn_blocking(move || {
            kt_sandbox::generator::run_generator(&sandbox, &python, &script, &spec, seed, &dest)
                .map(|t| Generated {
                    id: t.id,
                    dir: t.dir,
                    manifest: t.manifest,
                    reused: t.reused,
                })
        })
        .await
        .unwrap_or_else(|join| {
            Err(GeneratorError::Io {
                what: "run the generator thread",
                path: dest_for_error,
                source: std::io::Error::other(join.to_string()),
            })
        })
    })
    .await
    .map_err(|e| match e {
        kt_graph::EffectError::Failed { source, .. } => source,
        kt_graph::EffectError::Journal { source, .. } => GeneratorError::Io {
            what: "journal the generator run",
            path: deps.tests_dir.clone(),
            source: std::io::Error::other(source.to_string()),
        },
    })
}

async fn run_reference(
    deps: &Stage2Deps,
    ctx: &NodeContext,
    source: &str,
    kernel: &Kernel,
    info: &KernelInfo,
    generated: &Generated,
) -> Result<super::reference::ReferenceRun, PipelineError> {
    let job = ReferenceJob {
        source,
        kernel,
        info,
        test_dir: &generated.dir,
        manifest: &generated.manifest,
    };
    let runner = deps.reference.clone();
    let run = ctx
        .effect_keyed("reference", &generated.id, || async move {
            runner.run(job).await
        })
        .await
        .map_err(|e| match e {
            kt_graph::EffectError::Failed { source, .. } => source,
            kt_graph::EffectError::Journal { source, .. } => PipelineError::Graph {
                stage: "stage 2",
                message: source.to_string(),
            },
        })?;
    if !expected_files_exist(&generated.dir, &run.expected) {
        return Err(PipelineError::Reference {
            test: generated.id.clone(),
            message: "the reference run reported expected outputs that are not on disk".into(),
            inputs_at_fault: false,
        });
    }
    Ok(run)
}

fn expected_files_exist(dir: &Path, expected: &BTreeMap<String, String>) -> bool {
    expected.values().all(|f| dir.join(f).is_file())
}
