//! `kt experiment run`: every cell of a design through a pool of workers.
//!
//! With `--gpus 0,1,…` there is one worker per GPU, pinned to it through `CUDA_VISIBLE_DEVICES`, so a GPU
//! never runs two cells at once (timings stay clean); `--jobs` can lower that further. Without GPUs (for
//! example replayed or scripted models on a CPU-only machine, or one shared GPU whose cells spend most of
//! their time waiting on the LLM) there are `--jobs` workers that inherit the environment's GPUs.
//!
//! Workers pull cells from one queue in expansion order; the calling thread is the only writer of the
//! ledger and the progress display. A cell whose latest record is final is skipped before anything starts;
//! everything else goes through [`CellRunner::run`], which records an existing final result, resumes a
//! half-finished run or starts a new one. So an interrupted experiment rerun with the same command continues
//! where it stopped and runs no cell twice.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cell::{Cell, CellId};
use crate::cell_run::{CellOutcome, CellRunner};
use crate::design::Design;
use crate::error::ExperimentError;
use crate::interrupt::StopSignal;
use crate::launch::KtBinary;
use crate::ledger::{CellRecord, CellStatus, Ledger};
use crate::progress::{Progress, human};

/// Options of `kt experiment run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// GPU ids, one worker each. Empty: `jobs` workers without a GPU assignment.
    pub gpus: Vec<String>,
    /// Upper bound on concurrent cells (default: one per GPU, or 1 without GPUs).
    pub jobs: Option<usize>,
    /// The experiment directory.
    pub out: PathBuf,
    pub kt: KtBinary,
    /// SIGINT-to-SIGKILL grace for stopped cells.
    pub grace: Duration,
    /// How often running cells are checked.
    pub poll: Duration,
    /// Draw the progress bar.
    pub progress: bool,
}

impl RunOptions {
    pub fn new(out: impl Into<PathBuf>, kt: KtBinary) -> RunOptions {
        RunOptions {
            gpus: Vec::new(),
            jobs: None,
            out: out.into(),
            kt,
            grace: Duration::from_secs(60),
            poll: Duration::from_millis(200),
            progress: true,
        }
    }

    /// The GPU (or none) of each worker.
    fn workers(&self) -> Vec<Option<String>> {
        if self.gpus.is_empty() {
            vec![None; self.jobs.unwrap_or(1).max(1)]
        } else {
            let n = self
                .jobs
                .map_or(self.gpus.len(), |j| j.clamp(1, self.gpus.len()));
            self.gpus.iter().take(n).cloned().map(Some).collect()
        }
    }
}

/// What one invocation did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunSummary {
    pub total: usize,
    /// Cells already recorded as final before this invocation.
    pub skipped: usize,
    pub finished: usize,
    pub failed: usize,
    pub over_budget: usize,
    pub crashed: usize,
    /// Cells whose run stopped where it needs a GPU (resumable; infrastructure, not a result).
    pub needs_gpu: usize,
    /// Cells whose run ended on an LLM outage (resumable; infrastructure, not a result).
    pub llm_unavailable: usize,
    /// Cells stopped by an interrupt, or never started because of one.
    pub not_done: usize,
    pub elapsed_s: f64,
}

impl RunSummary {
    /// Whether every cell has a final record.
    pub fn complete(&self) -> bool {
        self.crashed == 0 && self.needs_gpu == 0 && self.llm_unavailable == 0 && self.not_done == 0
    }
}

enum Event {
    Started,
    Ended {
        cell: Box<Cell>,
        outcome: Result<CellOutcome, ExperimentError>,
        took: Duration,
    },
}

/// Runs the cells of `design` (already expanded into `cells`) into `opts.out`.
pub fn run_experiment(
    design: &Design,
    cells: &[Cell],
    opts: &RunOptions,
    stop: &StopSignal,
) -> Result<RunSummary, ExperimentError> {
    prepare_out_dir(design, cells, &opts.out)?;
    let ledger = Ledger::new(&opts.out);
    let records = ledger.load()?;
    let pending: VecDeque<Cell> = cells
        .iter()
        .filter(|c| !records.get(&c.id).is_some_and(|r| r.status.is_final()))
        .cloned()
        .collect();
    let summary = RunSummary {
        total: cells.len(),
        skipped: cells.len() - pending.len(),
        ..RunSummary::default()
    };
    let workers = opts.workers();
    tracing::info!(
        cells = cells.len(),
        skipped = summary.skipped,
        workers = workers.len(),
        out = %opts.out.display(),
        "running experiment {}",
        design.name
    );
    let mut runner = CellRunner::new(opts.kt.clone(), design.root.clone(), opts.out.clone());
    runner.grace = opts.grace;
    runner.poll = opts.poll;
    runner.llm_configs = design.llm_configs.clone();
    let progress = Progress::new(cells.len(), summary.skipped, workers.len(), opts.progress);
    let mut tally = Tally {
        ledger: &ledger,
        stop,
        summary,
        progress,
        first_error: None,
    };
    let queue = Mutex::new(pending);
    let (tx, rx) = mpsc::channel::<Event>();
    std::thread::scope(|scope| {
        for gpu in &workers {
            let tx = tx.clone();
            let (queue, runner) = (&queue, &runner);
            scope.spawn(move || work_through(queue, runner, gpu.as_deref(), stop, &tx));
        }
        drop(tx);
        for event in rx {
            tally.take(event);
        }
    });
    let Tally {
        mut summary,
        progress,
        first_error,
        ..
    } = tally;
    progress.finish();
    summary.not_done += queue.into_inner().unwrap_or_else(|p| p.into_inner()).len();
    summary.elapsed_s = progress.elapsed().as_secs_f64();
    match first_error {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// One worker (on `gpu`): takes cells off the queue and runs them until the queue is empty or a stop.
fn work_through(
    queue: &Mutex<VecDeque<Cell>>,
    runner: &CellRunner,
    gpu: Option<&str>,
    stop: &StopSignal,
    tx: &mpsc::Sender<Event>,
) {
    while !stop.is_stopped() {
        // A poisoned queue only means another worker panicked; the queue itself is intact.
        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        let Some(cell) = next else { break };
        let _ = tx.send(Event::Started);
        let start = Instant::now();
        let outcome = runner.run(&cell, gpu, stop);
        let _ = tx.send(Event::Ended {
            cell: Box::new(cell),
            outcome,
            took: start.elapsed(),
        });
    }
}

/// What the workers report, counted, recorded in the ledger and shown as progress; the first error stops
/// the run.
struct Tally<'a> {
    ledger: &'a Ledger,
    stop: &'a StopSignal,
    summary: RunSummary,
    progress: Progress,
    first_error: Option<ExperimentError>,
}

impl Tally<'_> {
    fn take(&mut self, event: Event) {
        let Event::Ended {
            cell,
            outcome,
            took,
        } = event
        else {
            self.progress.started();
            return;
        };
        match outcome {
            Ok(CellOutcome::Recorded { record, launched }) => self.recorded(
                &cell,
                &record,
                if launched { took } else { Duration::ZERO },
                took,
            ),
            Ok(CellOutcome::Interrupted) => {
                self.summary.not_done += 1;
                self.progress
                    .ended(None, Duration::ZERO, &format!("stopped     {}", cell.id));
            }
            Ok(CellOutcome::Busy) => {
                self.summary.not_done += 1;
                let line = format!("busy        {} (another kt process runs it)", cell.id);
                self.progress.ended(None, Duration::ZERO, &line);
            }
            Err(e) => {
                tracing::error!(cell = %cell.id, "{e}");
                self.summary.not_done += 1;
                self.progress.ended(
                    None,
                    Duration::ZERO,
                    &format!("error       {}: {e}", cell.id),
                );
                self.first_error.get_or_insert(e);
                self.stop.stop();
            }
        }
    }

    /// A cell that ran to a record: into the ledger, counted by status, one progress line.
    fn recorded(&mut self, cell: &Cell, record: &CellRecord, launched: Duration, took: Duration) {
        if let Err(e) = self.ledger.append(record) {
            tracing::error!(cell = %cell.id, "cannot record the cell: {e}");
            self.first_error.get_or_insert(e);
            self.stop.stop();
        }
        let s = &mut self.summary;
        match record.status {
            CellStatus::Finished => s.finished += 1,
            CellStatus::Failed => s.failed += 1,
            CellStatus::OverBudget => s.over_budget += 1,
            CellStatus::Crashed => s.crashed += 1,
            CellStatus::NeedsGpu => s.needs_gpu += 1,
            CellStatus::LlmUnavailable => s.llm_unavailable += 1,
        }
        let speed = record
            .run_result()
            .speedup
            .map_or_else(String::new, |s| format!(" {s:.2}×"));
        let line = format!(
            "{:<11} {}{speed} ({})",
            record.status.as_str(),
            cell.id,
            human(took)
        );
        self.progress.ended(Some(record.status), launched, &line);
    }
}

/// What an experiment directory says about its design: `plan.json`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Plan {
    pub experiment: String,
    pub design: PathBuf,
    pub cells: Vec<CellId>,
}

/// Creates the experiment directory with a copy of the design (`experiment.toml`) and `plan.json` (the
/// design's name and every cell id in order), so the directory explains itself and `report DIR` knows how
/// many cells were planned.
pub fn prepare_out_dir(
    design: &Design,
    cells: &[Cell],
    out: &std::path::Path,
) -> Result<(), ExperimentError> {
    std::fs::create_dir_all(out)
        .map_err(|e| ExperimentError::io(out, "creating the experiment directory", e))?;
    let copy = out.join("experiment.toml");
    if std::fs::canonicalize(&design.file).ok() != std::fs::canonicalize(&copy).ok() {
        std::fs::copy(&design.file, &copy)
            .map_err(|e| ExperimentError::io(&copy, "copying the design", e))?;
    }
    let plan = Plan {
        experiment: design.name.clone(),
        design: std::fs::canonicalize(&design.file).unwrap_or_else(|_| design.file.clone()),
        cells: cells.iter().map(|c| c.id.clone()).collect(),
    };
    let path = out.join("plan.json");
    let json = serde_json::to_string_pretty(&plan).unwrap_or_default();
    std::fs::write(&path, json).map_err(|e| ExperimentError::io(&path, "writing the plan", e))
}

/// Runs one cell by id and records it: `kt experiment run-cell` (a SLURM array task). A cell already
/// recorded as final is left alone.
pub fn run_one_cell(
    design: &Design,
    cells: &[Cell],
    id: &str,
    runner: &CellRunner,
    gpu: Option<&str>,
    stop: &StopSignal,
) -> Result<Option<CellStatus>, ExperimentError> {
    let cell =
        cells
            .iter()
            .find(|c| c.id.as_str() == id)
            .ok_or_else(|| ExperimentError::UnknownCell {
                id: id.to_string(),
                path: design.file.clone(),
            })?;
    let ledger = Ledger::new(&runner.out);
    if let Some(r) = ledger
        .load()?
        .get(&CellId(id.to_string()))
        .filter(|r| r.status.is_final())
    {
        tracing::info!(cell = id, status = r.status.as_str(), "already recorded");
        return Ok(Some(r.status));
    }
    let mut runner = runner.clone();
    runner.llm_configs = design.llm_configs.clone();
    match runner.run(cell, gpu, stop)? {
        CellOutcome::Recorded { record, .. } => {
            ledger.append(&record)?;
            Ok(Some(record.status))
        }
        CellOutcome::Interrupted | CellOutcome::Busy => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_per_gpu_bounded_by_jobs() {
        let mut o = RunOptions::new("/tmp/x", KtBinary::new("kt"));
        assert_eq!(o.workers(), vec![None]);
        o.jobs = Some(3);
        assert_eq!(o.workers().len(), 3);
        o.gpus = vec!["0".into(), "1".into()];
        assert_eq!(
            o.workers(),
            vec![Some("0".to_string()), Some("1".to_string())]
        );
        o.jobs = Some(1);
        assert_eq!(o.workers(), vec![Some("0".to_string())]);
        o.jobs = None;
        assert_eq!(o.workers().len(), 2);
    }
}
