//! Stage 2's one node, `make_test`, in its steps (see `graph.rs` for the loop): the program, the sandbox
//! run, the size rules, the original kernel's run, acceptance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kt_cuda::Kernel;
use kt_graph::NodeContext;
use kt_llm::{LlmClient, LlmRequest};
use kt_sandbox::generator::{ArgSpec, GeneratorError, GeneratorSpec, TestManifest};
use serde::{Deserialize, Serialize};

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;

use super::answers::GeneratorScript;
use super::constants::generator_constants;
use super::generator_prompt::generator_prompt;
use super::prefetch::{GeneratorPrefetch, run_key};
use super::reference::{ReferenceJob, record_in_manifest};
use super::state::{Revision, Stage2Deps, Stage2Options, Stage2State, Stage2Update, TestRecord};

/// The generator spec of a kernel: its parameters in order, the `__constant__` symbols it reads, outputs and
/// problem size from Stage 1.
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
        constants: generator_constants(kernel),
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

pub(super) struct MakeTest {
    pub(super) deps: Stage2Deps,
    /// The remaining seeds' runs of the program, started ahead.
    pub(super) prefetch: GeneratorPrefetch,
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
        let (deps, prefetch) = (self.deps.clone(), self.prefetch.clone());
        async move { make_test(&deps, &prefetch, &state, &ctx).await }
    }
}

fn missing(what: &str) -> PipelineError {
    PipelineError::Graph {
        stage: "stage 2",
        message: format!("the initial state has no {what}"),
    }
}

/// One attempt at test number `index`: what every step of [`make_test`] reads.
struct Attempt<'a> {
    deps: &'a Stage2Deps,
    prefetch: &'a GeneratorPrefetch,
    state: &'a Stage2State,
    ctx: &'a NodeContext,
    kernel: &'a Kernel,
    info: &'a KernelInfo,
    index: usize,
    seed: u64,
}

/// How a step ends when the test is not (yet) accepted: a pending revision of the program, which is not an
/// error, or an error.
enum NotAccepted {
    Revise(Box<Stage2Update>),
    Failed(PipelineError),
}

impl NotAccepted {
    fn into_result(self) -> Result<Stage2Update, PipelineError> {
        match self {
            NotAccepted::Revise(update) => Ok(*update),
            NotAccepted::Failed(e) => Err(e),
        }
    }
}

impl From<PipelineError> for NotAccepted {
    fn from(e: PipelineError) -> Self {
        NotAccepted::Failed(e)
    }
}

/// The problem size a generated test has, and what the tests so far say of it.
struct SizeFacts {
    problem_size: Option<[i64; 3]>,
    tail: bool,
    all_odd: bool,
    warnings: Vec<String>,
}

async fn make_test(
    deps: &Stage2Deps,
    prefetch: &GeneratorPrefetch,
    state: &Stage2State,
    ctx: &NodeContext,
) -> Result<Stage2Update, PipelineError> {
    let index = state.tests.len();
    let attempt = Attempt {
        deps,
        prefetch,
        state,
        ctx,
        kernel: state.kernel.as_ref().ok_or_else(|| missing("kernel"))?,
        info: state.info.as_ref().ok_or_else(|| missing("KernelInfo"))?,
        index,
        // Wrapping: a user seed near u64::MAX must not panic.
        seed: deps.options.first_seed.wrapping_add(index as u64),
    };
    let script = attempt.program().await?;
    // the tests after this one run the same program unless it is revised: start them now
    let later =
        (index + 1..deps.options.tests).map(|i| deps.options.first_seed.wrapping_add(i as u64));
    // (not where the tests are made elsewhere: only this one run checks the program here)
    if deps.reference.runs_elsewhere().is_none() {
        prefetch.start(
            &deps.sandbox,
            &deps.python,
            &script,
            &generator_spec(attempt.kernel, attempt.info, &deps.options),
            later,
        );
    }
    let generated = attempt.generate(&script).await?;
    let discard = || {
        if !generated.reused {
            let _ = std::fs::remove_dir_all(&generated.dir);
        }
    };
    let mut sizes = match attempt.check_sizes(&script, &generated) {
        Ok(sizes) => sizes,
        Err(not_accepted) => {
            discard();
            return not_accepted.into_result();
        }
    };
    let reference_time_ms = match attempt.run_original(&script, &generated, &mut sizes).await {
        Ok(ms) => ms,
        Err(NotAccepted::Revise(update)) => {
            discard();
            return Ok(*update);
        }
        // a failed reference run keeps the test's directory, as its error names it
        Err(NotAccepted::Failed(e)) => return Err(e),
    };
    attempt.accept(script, &generated, sizes, reference_time_ms)
}

impl Attempt<'_> {
    fn refused(&self, script: &str, reason: String) -> PipelineError {
        PipelineError::GeneratorRefused {
            node: "stage2.make_test".into(),
            reason,
            script: Some(script.to_string()),
        }
    }

    /// Step 1: the program, asked of the LLM when there is none yet, a revision is pending or the last
    /// attempt failed; else the last one.
    async fn program(&self) -> Result<String, PipelineError> {
        let state = self.state;
        let needs_llm =
            state.script.is_none() || state.revision.is_some() || !state.feedback.is_empty();
        match (&self.deps.llm, needs_llm) {
            (Some(llm), true) => {
                ask_for_script(
                    self.deps,
                    llm,
                    state,
                    self.kernel,
                    self.info,
                    self.seed,
                    self.ctx,
                )
                .await
            }
            (_, _) => state
                .script
                .clone()
                .ok_or_else(|| missing("generator program and no LLM to write one")),
        }
    }

    /// Step 2: the program runs in the sandbox; a test identical to an earlier one is refused.
    async fn generate(&self, script: &str) -> Result<Generated, PipelineError> {
        let (deps, seed) = (self.deps, self.seed);
        let spec = generator_spec(self.kernel, self.info, &deps.options);
        let generated = run_generator(deps, self.prefetch, self.ctx, script, &spec, seed)
            .await
            .map_err(|e| match e {
                GeneratorError::Io { .. }
                | GeneratorError::Sandbox(_)
                | GeneratorError::Python(_)
                | GeneratorError::SpecInvalid { .. } => e.into(),
                e if deps.llm.is_some() && e.is_generator_fault() => {
                    self.refused(script, format!("with seed {seed} the program failed: {e}"))
                }
                e => e.into(),
            })?;
        if let Some(earlier) = self.state.tests.iter().find(|t| t.id == generated.id) {
            if !generated.reused {
                let _ = std::fs::remove_dir_all(&generated.dir);
            }
            return Err(self.refused(script, format!(
                "seeds {} and {seed} produced identical arguments; draw every random value from np.random.default_rng(seed) \
                 and let the sizes depend on the seed",
                earlier.seed
            )));
        }
        Ok(generated)
    }

    /// A revision of the program, when the LLM may still revise; None otherwise.
    fn revise(&self, script: &str, event: &str, revision: Revision) -> Option<NotAccepted> {
        let state = self.state;
        if self.deps.llm.is_none() || state.revisions >= self.deps.options.max_revisions {
            return None;
        }
        let detail = match &revision {
            Revision::Tail { seed, problem_size } => {
                serde_json::json!({ "seed": seed, "problem_size": problem_size })
            }
            Revision::Resize {
                seed, measured_ms, ..
            } => serde_json::json!({ "seed": seed, "measured_ms": measured_ms }),
        };
        self.ctx.emit(event, detail);
        Some(NotAccepted::Revise(Box::new(
            Stage2Update::default()
                .script(Some(script.to_string()))
                .revision(Some(revision))
                .revisions(state.revisions + 1),
        )))
    }

    /// Step 3: the problem size and the tail rule; the last test is sent back until some test has a tail
    /// and some test is odd in every dimension.
    fn check_sizes(&self, script: &str, generated: &Generated) -> Result<SizeFacts, NotAccepted> {
        let (state, seed) = (self.state, self.seed);
        let dims = self.info.dimensions();
        let ps = generated.manifest.problem_size;
        if let Some(p) = ps
            && p.iter().take(dims).any(|d| *d <= 0)
        {
            return Err(self
                .refused(
                    script,
                    format!(
                        "the problem size evaluates to {p:?}; every dimension must be at least 1"
                    ),
                )
                .into());
        }
        let tail = ps.is_some_and(|p| has_tail(&p, dims));
        let odd = ps.is_some_and(|p| all_odd(&p, dims));
        let mut warnings = Vec::new();
        let last = self.index + 1 >= self.deps.options.tests;
        let tail_missing = !tail && !state.tests.iter().any(|t| t.tail);
        let odd_missing = ps.is_some() && !odd && !state.tests.iter().any(|t| t.all_odd);
        if last && (tail_missing || odd_missing) {
            let revision = Revision::Tail {
                seed,
                problem_size: ps,
            };
            if let Some(revise) = self.revise(script, "tail_requested", revision) {
                return Err(revise);
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
            warnings.extend(self.shared_power_warnings(ps, dims));
        }
        Ok(SizeFacts {
            problem_size: ps,
            tail,
            all_odd: odd,
            warnings,
        })
    }

    fn shared_power_warnings(&self, ps: Option<[i64; 3]>, dims: usize) -> Vec<String> {
        let sizes: Vec<[i64; 3]> = self
            .state
            .tests
            .iter()
            .filter_map(|t| t.problem_size)
            .chain(ps)
            .collect();
        shared_powers_of_two(&sizes, dims)
            .into_iter()
            .map(|(d, power)| {
                format!(
                    "problem-size dimension {} is a multiple of {power} in every test; a kernel that assumes tiles of \
                     {power} would pass them all",
                    ["x", "y", "z"][d]
                )
            })
            .collect()
    }

    /// Step 4: the original kernel on the test (when a GPU is available): expected outputs and its time; a
    /// time outside the bounds asks for a resize.
    async fn run_original(
        &self,
        script: &str,
        generated: &Generated,
        sizes: &mut SizeFacts,
    ) -> Result<Option<f64>, NotAccepted> {
        let (deps, seed) = (self.deps, self.seed);
        if let Some(reason) = deps.reference.runs_elsewhere() {
            // the program works here; its data is made again where the GPU is
            if !generated.reused {
                let _ = std::fs::remove_dir_all(&generated.dir);
            }
            return Err(NotAccepted::Failed(PipelineError::TestsNeedGpu {
                reason: reason.to_string(),
            }));
        }
        if deps.reference.availability().is_err() {
            return Ok(None);
        }
        let run = run_reference(deps, self.ctx, &self.state.source, self.kernel, self.info, generated)
            .await
            .map_err(|e| match e {
                PipelineError::Reference { inputs_at_fault: true, test, message } if deps.llm.is_some() => {
                    self.refused(script, format!("the original kernel failed on the arguments of seed {seed} (test {test}): {message}"))
                }
                other => other,
            })?;
        record_in_manifest(&generated.dir, &run)?;
        let b = deps.options.bounds;
        if run.time_ms < b.min_ms || run.time_ms > b.max_ms {
            let revision = Revision::Resize {
                seed,
                problem_size: sizes.problem_size,
                measured_ms: run.time_ms,
            };
            if let Some(revise) = self.revise(script, "resize_requested", revision) {
                return Err(revise);
            }
            sizes.warnings.push(format!(
                "test {} (seed {seed}) runs {:.3} ms, outside [{}, {}] ms; kept because no more resizes are allowed",
                generated.id, run.time_ms, b.min_ms, b.max_ms
            ));
        }
        Ok(Some(run.time_ms))
    }

    /// Step 5: accepted. The program is kept beside the test, so the test can be remade or audited.
    fn accept(
        &self,
        script: String,
        generated: &Generated,
        sizes: SizeFacts,
        reference_time_ms: Option<f64>,
    ) -> Result<Stage2Update, PipelineError> {
        kt_record::layout::write_file(&generated.dir.join("generator.py"), script.as_bytes())?;
        let record = TestRecord {
            id: generated.id.clone(),
            dir: generated.dir.clone(),
            seed: self.seed,
            problem_size: sizes.problem_size,
            tail: sizes.tail,
            all_odd: sizes.all_odd,
            reference_time_ms,
            reused: generated.reused,
        };
        tracing::info!(test = %record.id, seed = self.seed, problem_size = ?sizes.problem_size, time_ms = ?reference_time_ms, "test accepted");
        Ok(Stage2Update::default()
            .script(Some(script))
            .revision(None)
            .tests(vec![record])
            .warnings(sizes.warnings))
    }
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
    let (prompt, label) =
        generator_prompt(&deps.prompts, &deps.options, state, kernel, info, seed)?;
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
    prefetch: &GeneratorPrefetch,
    ctx: &NodeContext,
    script: &str,
    spec: &GeneratorSpec,
    seed: u64,
) -> Result<Generated, GeneratorError> {
    let key = run_key(script, seed);
    let prefetch = prefetch.clone();
    let effect_key = key.clone();
    let (fresh_deps, fresh_script, fresh_spec) = (deps.clone(), script.to_string(), spec.clone());
    let journaled = ctx
        .effect_keyed("generator", &effect_key, || async move {
            if let Some(prefetched) = prefetch.take(&key, &fresh_deps.tests_dir).await {
                return prefetched.map(generated);
            }
            run_in_sandbox(&fresh_deps, fresh_script, fresh_spec, seed).await
        })
        .await
        .map_err(|e| match e {
            kt_graph::EffectError::Failed { source, .. } => source,
            kt_graph::EffectError::Journal { source, .. } => GeneratorError::Io {
                what: "journal the generator run",
                path: deps.tests_dir.clone(),
                source: std::io::Error::other(source.to_string()),
            },
        })?;
    // The journal remembers a run, not its files: a run resumed on another machine (or after its data was
    // removed, as where a GPU is missing) runs the program again; the content id says whether it is the same.
    if journaled.dir.join("manifest.json").is_file() {
        return Ok(journaled);
    }
    run_in_sandbox(deps, script.to_string(), spec.clone(), seed).await
}

fn generated(t: kt_sandbox::GeneratedTest) -> Generated {
    Generated {
        id: t.id,
        dir: t.dir,
        manifest: t.manifest,
        reused: t.reused,
    }
}

/// One run of the program in the sandbox, on the blocking pool, into the tests directory.
async fn run_in_sandbox(
    deps: &Stage2Deps,
    script: String,
    spec: GeneratorSpec,
    seed: u64,
) -> Result<Generated, GeneratorError> {
    let (sandbox, python, dest) = (
        deps.sandbox.clone(),
        deps.python.clone(),
        deps.tests_dir.clone(),
    );
    let dest_for_error = dest.clone();
    tokio::task::spawn_blocking(move || {
        kt_sandbox::generator::run_generator(&sandbox, &python, &script, &spec, seed, &dest)
            .map(generated)
    })
    .await
    .unwrap_or_else(|join| {
        Err(GeneratorError::Io {
            what: "run the generator thread",
            path: dest_for_error,
            source: std::io::Error::other(join.to_string()),
        })
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
