//! Running one cell to its end: decide between recording an existing final result, resuming a
//! half-finished run and starting a new one; watch the process against the cell's budget and the stop
//! signal; and describe how it ended. Used by the scheduler's workers and by `kt experiment run-cell` (one
//! SLURM array task).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::budget::{BudgetKind, LlmTally};
use crate::cell::Cell;
use crate::error::ExperimentError;
use crate::interrupt::StopSignal;
use crate::launch::{CellProcess, KtBinary, log_tail};
use crate::ledger::{CellRecord, CellStatus, now_rfc3339, relative_path};
use kt_record::RunResult;

use crate::run_dir::{RunState, locate};

/// What the coordinator remembers about a cell between attempts: `<out>/cells/<id>/cell-state.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct CellState {
    attempts: u32,
    elapsed_s: f64,
}

/// How a cell's turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CellOutcome {
    /// The cell reached a record (finished, failed, over budget, or crashed); write it to the ledger.
    Recorded {
        record: Box<CellRecord>,
        launched: bool,
    },
    /// Stopped by the stop signal before it ended; it stays resumable and gets no record.
    Interrupted,
    /// Another process (a second `kt experiment run`, a SLURM task) holds the cell's lock and is running it.
    Busy,
}

/// Runs cells of one experiment directory.
#[derive(Debug, Clone)]
pub struct CellRunner {
    pub kt: KtBinary,
    /// The design's root: kernel and provider paths are relative to it, and children run in it.
    pub root: PathBuf,
    /// The experiment directory (`--out`).
    pub out: PathBuf,
    /// How long a stopped cell gets between SIGINT and SIGKILL.
    pub grace: Duration,
    /// How often a running cell is checked (exit, stop, budget).
    pub poll: Duration,
    /// The design's per-model LLM configuration files, given to cells as `KT_CONFIG`.
    pub llm_configs: BTreeMap<String, PathBuf>,
}

impl CellRunner {
    pub fn new(kt: KtBinary, root: impl Into<PathBuf>, out: impl Into<PathBuf>) -> CellRunner {
        // Absolute paths: cells run in the root, so `--out` must not depend on the coordinator's directory.
        let (root, out) = (root.into(), out.into());
        CellRunner {
            kt,
            root: std::path::absolute(&root).unwrap_or(root),
            out: std::path::absolute(&out).unwrap_or(out),
            grace: Duration::from_secs(60),
            poll: Duration::from_millis(200),
            llm_configs: BTreeMap::new(),
        }
    }

    pub fn cell_dir(&self, cell: &Cell) -> PathBuf {
        self.out.join("cells").join(cell.id.as_str())
    }

    /// Runs `cell` on `gpu` (None: inherit the environment's GPUs) until it ends or `stop` trips.
    pub fn run(
        &self,
        cell: &Cell,
        gpu: Option<&str>,
        stop: &StopSignal,
    ) -> Result<CellOutcome, ExperimentError> {
        let cell_dir = self.cell_dir(cell);
        std::fs::create_dir_all(&cell_dir)
            .map_err(|e| ExperimentError::io(&cell_dir, "creating the cell directory", e))?;
        // One process per cell: a second coordinator on the same directory must not run it again.
        let lock = match lock_cell(&cell_dir)? {
            Some(lock) => Some(lock),
            // a requeued SLURM task may start while its preempted predecessor is still being stopped
            None if requeued_slurm_task() => wait_for_cell_lock(&cell_dir, REQUEUE_LOCK_WAIT)?,
            None => None,
        };
        let Some(_lock) = lock else {
            return Ok(CellOutcome::Busy);
        };
        let state_path = cell_dir.join("cell-state.json");
        let mut state: CellState = std::fs::read_to_string(&state_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();

        let cmd = match locate(&cell_dir)? {
            RunState::Final { dir, raw, .. } => {
                // Finished earlier but never recorded (the coordinator died in between): record, do not rerun.
                let record = self.final_record(cell, &state, &dir, raw, gpu)?;
                return Ok(CellOutcome::Recorded {
                    record: Box::new(record),
                    launched: false,
                });
            }
            RunState::Partial { dir } => {
                tracing::info!(cell = %cell.id, run = %dir.display(), "resuming");
                self.kt.resume(cell, &self.root, &dir)
            }
            RunState::Missing => self.kt.transform(cell, &self.root, &cell_dir),
        };
        if stop.is_stopped() {
            return Ok(CellOutcome::Interrupted);
        }
        let mut cmd = cmd;
        cmd.current_dir(&self.root);
        if let Some(config) = self.llm_configs.get(&cell.model) {
            cmd.env("KT_CONFIG", config);
        }
        state.attempts += 1;
        let log = cell_dir.join(format!("attempt-{}.log", state.attempts));
        let mut process = CellProcess::spawn(cmd, cell.id.as_str(), gpu, &log)?;
        tracing::debug!(cell = %cell.id, pid = process.id(), gpu, "started");

        let started = Instant::now();
        let before = Duration::from_secs_f64(state.elapsed_s);
        let watched = self.watch(cell, &cell_dir, &mut process, before, stop)?;
        state.elapsed_s += started.elapsed().as_secs_f64();
        write_state(&state_path, &state)?;

        let run = locate(&cell_dir)?;
        if let RunState::Final { dir, raw, .. } = run {
            // A run that reached its final result as it was being stopped counts as what it reports.
            let record = self.final_record(cell, &state, &dir, raw, gpu)?;
            return Ok(CellOutcome::Recorded {
                record: Box::new(record),
                launched: true,
            });
        }
        // A stop that came as the child exited is still a stop: on SLURM, a requeue or cancel sends SIGTERM
        // to every process of the task, so the cell may die of it before the coordinator passes on SIGINT.
        // Either way the run is resumable, and recording it as a crash would be wrong.
        if watched.stopped_by_signal || stop.is_stopped() {
            return Ok(CellOutcome::Interrupted);
        }
        let record = self.unfinished_record(cell, &state, gpu, run, watched, &log)?;
        Ok(CellOutcome::Recorded {
            record: Box::new(record),
            launched: true,
        })
    }

    /// Waits for the cell's process while watching its budget and `stop`: how it ended, and what its LLM
    /// calls cost so far.
    fn watch(
        &self,
        cell: &Cell,
        cell_dir: &Path,
        process: &mut CellProcess,
        before: Duration,
        stop: &StopSignal,
    ) -> Result<Watched, ExperimentError> {
        let started = Instant::now();
        let mut llm = LlmTally::default();
        let mut run_dir: Option<PathBuf> = None;
        let mut over: Option<BudgetKind> = None;
        let mut stopped_by_signal = false;
        let exit = loop {
            if let Some(status) = process.try_wait()? {
                // A run that stopped unfinished between two polls after its time was up was stopped by it.
                if !status.success() {
                    over = cell.budget.exceeded(before + started.elapsed(), &llm);
                }
                break status;
            }
            if stop.is_stopped() {
                stopped_by_signal = true;
                break process.stop(self.grace, stop.is_immediate())?;
            }
            if cell.budget.watches_llm() {
                if run_dir.is_none() {
                    run_dir = started_run(cell_dir)?;
                }
                if let Some(dir) = &run_dir {
                    llm.update(&dir.join("llm.jsonl"))?;
                }
            }
            if let Some(kind) = cell.budget.exceeded(before + started.elapsed(), &llm) {
                tracing::info!(cell = %cell.id, "over its {kind} budget: stopping it");
                over = Some(kind);
                break process.stop(self.grace, false)?;
            }
            std::thread::sleep(self.poll);
        };
        Ok(Watched {
            exit,
            llm,
            over,
            stopped_by_signal,
        })
    }

    /// The record of a cell whose run left no final result: over budget, needing a GPU, the LLM down, or a
    /// crash, with its log's tail.
    fn unfinished_record(
        &self,
        cell: &Cell,
        state: &CellState,
        gpu: Option<&str>,
        run: RunState,
        watched: Watched,
        log: &Path,
    ) -> Result<CellRecord, ExperimentError> {
        let Watched {
            exit,
            mut llm,
            over,
            ..
        } = watched;
        let dir = match run {
            RunState::Partial { dir } => Some(dir),
            _ => None,
        };
        if let Some(d) = &dir {
            llm = LlmTally::default();
            llm.update(&d.join("llm.jsonl"))?;
        }
        let result = dir
            .as_deref()
            .and_then(|d| RunResult::read_json(&d.join("result.json")).ok().flatten());
        let status = match over {
            Some(_) => CellStatus::OverBudget,
            None => unfinished_status(exit.code(), result.as_ref()),
        };
        let mut record = CellRecord::for_cell(cell, status);
        record.over_budget = over;
        record.attempts = state.attempts;
        record.elapsed_s = state.elapsed_s;
        record.llm_tokens = llm.tokens;
        record.llm_cost_usd = llm.dollars;
        record.gpu = given_gpu(gpu);
        record.run_dir = dir.as_deref().map(|d| relative_path(d, &self.out));
        let run_error = result.as_ref().and_then(|r| RunResult::from_value(r).error);
        record.result = result;
        record.error = Some(match (over, status) {
            (Some(kind), _) => {
                format!("stopped after exceeding its {kind} budget; the run is resumable")
            }
            (None, CellStatus::NeedsGpu) => format!(
                "needs a GPU: the run stopped where a CUDA GPU is required ({}); it is saved and the next \
                 `kt experiment run` on a machine with a GPU resumes it",
                run_error.as_deref().unwrap_or("no GPU")
            ),
            (None, CellStatus::LlmUnavailable) => format!(
                "the LLM service was unavailable ({}); an infrastructure failure, not a result: the next \
                 `kt experiment run` resumes the run from its last checkpoint",
                run_error.as_deref().unwrap_or("no answer")
            ),
            _ => format!(
                "kt exited with {exit} and no final result.json; last lines of {}:\n{}",
                log.display(),
                log_tail(log, 15)
            ),
        });
        record.recorded = now_rfc3339();
        Ok(record)
    }

    fn final_record(
        &self,
        cell: &Cell,
        state: &CellState,
        dir: &Path,
        raw: serde_json::Value,
        gpu: Option<&str>,
    ) -> Result<CellRecord, ExperimentError> {
        let result = RunResult::from_value(&raw);
        let status = if result.status.is_finished() {
            CellStatus::Finished
        } else {
            CellStatus::Failed
        };
        let mut llm = LlmTally::default();
        llm.update(&dir.join("llm.jsonl"))?;
        let mut record = CellRecord::for_cell(cell, status);
        record.attempts = state.attempts;
        record.elapsed_s = state.elapsed_s;
        record.llm_tokens = llm.tokens;
        record.llm_cost_usd = llm.dollars;
        record.run_dir = Some(relative_path(dir, &self.out));
        record.error = result.error.clone();
        record.gpu = given_gpu(gpu);
        record.result = Some(raw);
        Ok(record)
    }
}

/// The GPU a cell ran with: the worker's, else the `CUDA_VISIBLE_DEVICES` it inherited (a SLURM task's).
fn given_gpu(gpu: Option<&str>) -> Option<String> {
    gpu.map(str::to_string)
        .or_else(|| std::env::var("CUDA_VISIBLE_DEVICES").ok())
}

/// Exit status of `kt transform` / `kt resume` for a run ended by an LLM outage (EX_TEMPFAIL).
pub const EXIT_LLM_UNAVAILABLE: i32 = 75;
/// Exit status of `kt transform` / `kt resume` for a run that stopped where it needs a GPU it cannot get.
pub const EXIT_NEEDS_GPU: i32 = 2;

/// Why a run that left no final result ended: an LLM outage (result status `llm_unavailable`, or exit 75),
/// a missing GPU (the run saved at its last checkpoint as `interrupted` with `needs_gpu`, and kt exited 2), or
/// a crash (anything else).
fn unfinished_status(code: Option<i32>, result: Option<&serde_json::Value>) -> CellStatus {
    let summary = result.map(RunResult::from_value).unwrap_or_default();
    let status = summary.status;
    if status.is_llm_unavailable() || code == Some(EXIT_LLM_UNAVAILABLE) {
        CellStatus::LlmUnavailable
    } else if status.is_interrupted() && (code == Some(EXIT_NEEDS_GPU) || summary.needs_gpu) {
        CellStatus::NeedsGpu
    } else {
        CellStatus::Crashed
    }
}

/// The run directory a child created under the cell directory, once it exists.
fn started_run(cell_dir: &Path) -> Result<Option<PathBuf>, ExperimentError> {
    Ok(match locate(cell_dir)? {
        RunState::Final { dir, .. } | RunState::Partial { dir } => Some(dir),
        RunState::Missing => None,
    })
}

/// How a cell's process ended under watch.
struct Watched {
    exit: std::process::ExitStatus,
    llm: LlmTally,
    over: Option<BudgetKind>,
    stopped_by_signal: bool,
}

/// How long a requeued task waits for the lock its preempted predecessor still holds (SLURM's kill wait is
/// 30 s by default; the predecessor then also writes its interrupted record).
const REQUEUE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// True in a SLURM task that runs again after a requeue (`SLURM_RESTART_COUNT` > 0).
fn requeued_slurm_task() -> bool {
    std::env::var("SLURM_RESTART_COUNT")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .is_some_and(|n| n > 0)
}

/// [`lock_cell`], retried until `wait` has passed; None when the holder kept it all that time.
fn wait_for_cell_lock(
    cell_dir: &Path,
    wait: std::time::Duration,
) -> Result<Option<Flock<std::fs::File>>, ExperimentError> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        if let Some(lock) = lock_cell(cell_dir)? {
            return Ok(Some(lock));
        }
        if std::time::Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// Locks `cell_dir` for this process; None when another process holds it.
fn lock_cell(cell_dir: &Path) -> Result<Option<Flock<std::fs::File>>, ExperimentError> {
    let lock_path = cell_dir.join(".lock");
    let lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| ExperimentError::io(&lock_path, "opening the cell lock", e))?;
    match Flock::lock(lock_file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(Some(lock)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(ExperimentError::io(
            &lock_path,
            "locking the cell",
            std::io::Error::from(e),
        )),
    }
}

fn write_state(path: &Path, state: &CellState) -> Result<(), ExperimentError> {
    let json = serde_json::to_string(state).unwrap_or_default();
    std::fs::write(path, json).map_err(|e| ExperimentError::io(path, "writing the cell state", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_runs_are_told_apart_by_result_status_and_exit_code() {
        let v = |s: &str, e: &str| serde_json::json!({"status": s, "error": e});
        let mut gpu = v(
            "interrupted",
            "a CUDA GPU is needed from here on: no CUDA driver",
        );
        gpu["needs_gpu"] = true.into();
        assert_eq!(unfinished_status(Some(2), Some(&gpu)), CellStatus::NeedsGpu);
        assert_eq!(unfinished_status(None, Some(&gpu)), CellStatus::NeedsGpu);
        let down = v("llm_unavailable", "rate limited after 5 attempts");
        assert_eq!(
            unfinished_status(Some(75), Some(&down)),
            CellStatus::LlmUnavailable
        );
        assert_eq!(
            unfinished_status(Some(75), None),
            CellStatus::LlmUnavailable
        );
        // A plain interrupt that exited with an ordinary error is a crash, as is a run with no result.
        let stopped = v("interrupted", "interrupted");
        assert_eq!(
            unfinished_status(Some(1), Some(&stopped)),
            CellStatus::Crashed
        );
        assert_eq!(unfinished_status(Some(2), None), CellStatus::Crashed);
        assert_eq!(unfinished_status(None, None), CellStatus::Crashed);
    }

    #[test]
    fn a_requeued_task_waits_for_the_lock_its_predecessor_lets_go_of() {
        let dir = tempfile::tempdir().unwrap();
        let held = std::fs::File::create(dir.path().join(".lock")).unwrap();
        let held = Flock::lock(held, FlockArg::LockExclusiveNonblock).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(400));
            drop(held);
        });
        let short = wait_for_cell_lock(dir.path(), std::time::Duration::from_millis(50)).unwrap();
        assert!(short.is_none(), "still held after 50 ms");
        let got = wait_for_cell_lock(dir.path(), std::time::Duration::from_secs(10)).unwrap();
        assert!(got.is_some(), "taken once the holder let go");
        release.join().unwrap();
    }

    #[test]
    fn a_cell_locked_by_another_process_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let cell = Cell::for_test("c", "explicit", "scripted:s.toml");
        // `false` would fail the cell if it were started; the lock must prevent that.
        let runner = CellRunner::new(KtBinary::new("false"), dir.path(), dir.path().join("out"));
        let cell_dir = runner.cell_dir(&cell);
        std::fs::create_dir_all(&cell_dir).unwrap();
        let held = std::fs::File::create(cell_dir.join(".lock")).unwrap();
        let _held = Flock::lock(held, FlockArg::LockExclusiveNonblock).unwrap();
        let outcome = runner.run(&cell, None, &StopSignal::new()).unwrap();
        assert_eq!(outcome, CellOutcome::Busy);
        assert!(!cell_dir.join("attempt-1.log").exists());
    }
}
