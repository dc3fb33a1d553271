//! [`Stage3Binding`]: the [`GraphBinding`] of kt's Stage 3 strategies, built from what a run directory holds
//! (run.json's strategy and settings, input.cu or unit.cu, kernel_info.json) with kt-pipeline's own graph builder.
//!
//! Tuning while debugging goes to [`RecordedBackend`]: a candidate the run already measured (same code, same
//! parameters) gets its recorded result, so `debug node apply --llm scripted:...` that reproduces a recorded
//! kernel needs no GPU; anything new goes to the real tuner, which says clearly when there is no GPU.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use kt_graph::CompiledGraph;
use kt_pipeline::job::{BackendInputs, tuner_backend};
use kt_pipeline::stage3::{
    BackendError, KernelFacts, Outcome, PairTimes, ProfileRecord, ProfileRun, Reference,
    Stage3Context, Stage3State, TunableCode, TuningBackend, TuningProgress, build_graph,
};
use kt_pipeline::strategy::{StrategyOverrides, load_run_strategy};
use kt_pipeline::{PipelineError, PromptLibrary, RunDir};
use serde_json::Value;

use crate::binding::{GraphBinding, Setup};
use crate::capture::{CapturedCall, recorded_call};
use crate::error::RunsError;
use crate::record::RunRecord;

/// Binds Stage 3 runs.
#[derive(Debug, Clone, Default)]
pub struct Stage3Binding {
    /// Where prompts live (default: kt-pipeline's usual lookup).
    pub prompts_dir: Option<std::path::PathBuf>,
    /// Where strategies live (default: kt-pipeline's usual lookup).
    pub strategies_dir: Option<std::path::PathBuf>,
}

fn pipe(run: &RunDir) -> impl Fn(PipelineError) -> RunsError + '_ {
    move |source| RunsError::Pipeline {
        run: run.root().to_path_buf(),
        source: Box::new(source),
    }
}

impl GraphBinding for Stage3Binding {
    type State = Stage3State;

    fn build(&self, run: &RunDir, setup: &Setup) -> Result<CompiledGraph<Stage3State>, RunsError> {
        let err = pipe(run);
        let meta = run.read_meta().map_err(|e| err(e.into()))?;
        let overrides = StrategyOverrides {
            replan: meta.settings.replan,
            breakdown: meta.settings.breakdown,
            candidates: meta.settings.candidates,
        };
        let strategy = load_run_strategy(run, self.strategies_dir.as_deref())
            .map_err(&err)?
            .with_overrides(&overrides);
        let prompts = PromptLibrary::locate(self.prompts_dir.as_deref()).map_err(&err)?;
        // The code the run worked on: its kernel's unit when the input was a whole program.
        let source = run.kernel_code().map_err(|e| err(e.into()))?;
        let info = kt_pipeline::KernelInfo::load(run).map_err(&err)?;
        let parsed = kt_cuda::parse(&source).map_err(|e| err(e.into()))?;
        let kernel = parsed
            .select_kernel(Some(&info.name))
            .map_err(|e| err(e.into()))?
            .clone();
        let sidecar_path = kt_cuda::Sidecar::path_for(Path::new(&meta.kernel_file));
        let sidecar = if sidecar_path.is_file() {
            kt_cuda::Sidecar::load(&sidecar_path).ok()
        } else {
            None
        };
        let original = TunableCode::original(&source, &info);
        let live = tuner_backend(&BackendInputs {
            run,
            source: &source,
            kernel: &kernel,
            info: &info,
            original: &original,
            sidecar: sidecar.as_ref(),
            takes_profiles: strategy.settings.takes_profiles(),
        });
        let backend = RecordedBackend::from_run(run, live);
        let facts = KernelFacts {
            info,
            signature: kernel,
            source,
        };
        let cx = Stage3Context::new(strategy, facts, Arc::new(prompts))
            .with_llm(setup.client(run)?)
            .with_backend(Arc::new(backend))
            .with_run_dir(&setup.output_dir);
        build_graph(Arc::new(cx)).map_err(&err)
    }

    fn recorded_calls(&self, run: &RunDir, update: &[(&str, Value)]) -> Vec<CapturedCall> {
        update
            .iter()
            .filter(|(f, _)| *f == "llm_calls")
            .filter_map(|(_, v)| v.as_array())
            .flatten()
            .filter_map(|call| call.get("prompt_hash").and_then(Value::as_str))
            .filter_map(|hash| recorded_call(&run.llm_jsonl(), hash))
            .collect()
    }

    fn tuning_results(&self, update: &[(&str, Value)]) -> Vec<Value> {
        let mut out = Vec::new();
        for (field, value) in update {
            match *field {
                "reference" => out.push(serde_json::json!({"reference": value})),
                "candidates" => {
                    for c in value.as_array().into_iter().flatten() {
                        out.push(serde_json::json!({
                            "round": c.get("round"),
                            "index": c.get("index"),
                            "outcome": c.get("outcome"),
                            "failure": c.get("failure"),
                        }));
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// Tuning results the run recorded, by kernel; anything else goes to `live`.
pub struct RecordedBackend {
    reference: Option<Reference>,
    outcomes: HashMap<String, Outcome>,
    /// Recorded profiles by step and configuration (what a node that reads a profile asks for).
    profiles: HashMap<(String, String), ProfileRun>,
    live: Arc<dyn TuningBackend>,
}

impl RecordedBackend {
    /// Collects every measured candidate of every checkpoint of the run's Stage 3 history.
    pub fn from_run(run: &RunDir, live: Arc<dyn TuningBackend>) -> Self {
        let mut me = Self {
            reference: None,
            outcomes: HashMap::new(),
            profiles: HashMap::new(),
            live,
        };
        let Ok(record) = RunRecord::open(run.clone()) else {
            return me;
        };
        let Ok(checkpoints) = record.checkpoints() else {
            return me;
        };
        // Finished checkpoints of every branch hold every candidate of their line of history.
        for cp in checkpoints
            .iter()
            .filter(|c| c.is_finished() || c.id == checkpoints[checkpoints.len() - 1].id)
        {
            let Ok(fields) = record.fields_at(cp.id) else {
                continue;
            };
            if me.reference.is_none() {
                me.reference = fields
                    .get("reference")
                    .and_then(|r| serde_json::from_value(r.clone()).ok());
            }
            for c in fields
                .get("candidates")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (Some(kernel), Some(outcome)) = (c.get("kernel"), c.get("outcome")) else {
                    continue;
                };
                let (Ok(kernel), Ok(outcome)) = (
                    serde_json::from_value::<TunableCode>(kernel.clone()),
                    serde_json::from_value::<Outcome>(outcome.clone()),
                ) else {
                    continue;
                };
                me.outcomes.insert(key(&kernel), outcome);
            }
            for r in fields
                .get("profiles")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| serde_json::from_value::<ProfileRecord>(r.clone()).ok())
            {
                let run = ProfileRun {
                    profile: r.profile,
                    skipped: r.skipped,
                    seconds: r.seconds,
                    cached: r.from_cache,
                };
                me.profiles.insert(profile_key(&r.step, &r.params), run);
            }
        }
        me
    }

    /// How many measured kernels are known.
    pub fn known(&self) -> usize {
        self.outcomes.len()
    }
}

fn key(kernel: &TunableCode) -> String {
    serde_json::to_string(kernel).unwrap_or_default()
}

fn profile_key(step: &str, params: &BTreeMap<String, i64>) -> (String, String) {
    (
        step.to_string(),
        serde_json::to_string(params).unwrap_or_default(),
    )
}

#[async_trait]
impl TuningBackend for RecordedBackend {
    async fn reference(&self, original: &TunableCode) -> Result<Reference, BackendError> {
        match &self.reference {
            Some(r) => Ok(r.clone()),
            None => self.live.reference(original).await,
        }
    }

    async fn evaluate(
        &self,
        label: &str,
        kernel: &TunableCode,
        progress: &dyn TuningProgress,
    ) -> Result<Outcome, BackendError> {
        match self.outcomes.get(&key(kernel)) {
            Some(o) => {
                tracing::info!(
                    label,
                    "kernel measured before in this run: reusing its tuning result"
                );
                Ok(o.clone())
            }
            None => self.live.evaluate(label, kernel, progress).await,
        }
    }

    // A profile the recording took is what the prompt read then; others are measurements of this machine.
    async fn profile(
        &self,
        label: &str,
        kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
    ) -> Result<ProfileRun, BackendError> {
        match self.profiles.get(&profile_key(label, params)) {
            Some(run) => {
                tracing::info!(
                    label,
                    "kernel profiled before in this run: reusing its profile"
                );
                Ok(run.clone())
            }
            None => self.live.profile(label, kernel, params).await,
        }
    }

    // Launch times are measurements of this machine, never reused from the recording.
    async fn time_pair(
        &self,
        first: (&TunableCode, &BTreeMap<String, i64>),
        second: (&TunableCode, &BTreeMap<String, i64>),
        launches: u32,
    ) -> Result<PairTimes, BackendError> {
        self.live.time_pair(first, second, launches).await
    }
}
