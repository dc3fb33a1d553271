//! The experiment's ledger: `<out>/cells.jsonl`, one JSON line per recorded cell, appended as cells end, and a
//! copy of the same record in `<out>/cells/<id>/cell-record.json`. The JSONL file is what other tools read;
//! the per-cell copy covers appends lost on shared file systems (SLURM array tasks append concurrently, and
//! O_APPEND is only atomic on local disks). When a cell has several lines, the last one counts.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::budget::BudgetKind;
use crate::cell::{Cell, CellId};
use crate::error::ExperimentError;
use crate::settings::SettingValue;
use kt_record::RunResult;

/// How a cell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// The run finished (its `result.json` says `finished`).
    Finished,
    /// The run ended with `status: failed` (a result, not a crash: it is not retried).
    Failed,
    /// Stopped by the coordinator for exceeding its budget; final.
    OverBudget,
    /// The `kt` process exited without a final result. Not final: a rerun resumes the cell.
    Crashed,
    /// The run stopped where it needs a CUDA GPU (this machine or allocation has none). An infrastructure
    /// outcome, not a result: the run is saved and the next `kt experiment run` on a GPU resumes it.
    NeedsGpu,
    /// The run ended `llm_unavailable` (the LLM service failed past its retries). An infrastructure failure,
    /// never a gain of 0: the next `kt experiment run` resumes the run from its last checkpoint.
    LlmUnavailable,
}

impl CellStatus {
    /// Whether a rerun skips the cell.
    pub fn is_final(self) -> bool {
        !self.is_infrastructure()
    }

    /// Whether the cell ended for a reason outside the transformation (crash, no GPU, LLM outage): such
    /// cells are not results, reports leave them out, and a rerun resumes them.
    pub fn is_infrastructure(self) -> bool {
        matches!(
            self,
            CellStatus::Crashed | CellStatus::NeedsGpu | CellStatus::LlmUnavailable
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CellStatus::Finished => "finished",
            CellStatus::Failed => "failed",
            CellStatus::OverBudget => "over_budget",
            CellStatus::Crashed => "crashed",
            CellStatus::NeedsGpu => "needs_gpu",
            CellStatus::LlmUnavailable => "llm_unavailable",
        }
    }
}

/// One line of `cells.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub cell_id: CellId,
    pub kernel: String,
    pub kernel_file: String,
    pub strategy: String,
    /// Strategy plus grid point, e.g. `autonomous[breakdown=3,replan=0]`.
    pub variant: String,
    pub settings: BTreeMap<String, SettingValue>,
    pub model: String,
    pub repeat: u32,
    pub seed: u64,
    pub studies: Vec<String>,
    pub status: CellStatus,
    /// Which budget was exceeded, for `over_budget`.
    #[serde(default)]
    pub over_budget: Option<BudgetKind>,
    /// The run directory, relative to the experiment directory.
    #[serde(default)]
    pub run_dir: Option<String>,
    /// How many `kt` processes this cell took (transform plus resumes) in total.
    pub attempts: u32,
    /// Wall time over all attempts, as the coordinator measured it.
    pub elapsed_s: f64,
    /// LLM tokens and cost as read from the run's `llm.jsonl` (also for runs that left no result).
    #[serde(default)]
    pub llm_tokens: u64,
    #[serde(default)]
    pub llm_cost_usd: f64,
    /// Why the cell did not finish (run error, exit status and log tail).
    #[serde(default)]
    pub error: Option<String>,
    /// The GPU the cell was given (its `CUDA_VISIBLE_DEVICES`); None when it inherited the environment's.
    /// The device's name and PCI bus id are in the run's own record (run.json / result.json).
    #[serde(default)]
    pub gpu: Option<String>,
    /// When the record was written (UTC, RFC 3339).
    pub recorded: String,
    /// The run's `result.json`, verbatim; null when the run left none.
    #[serde(default)]
    pub result: Option<serde_json::Value>,
}

impl CellRecord {
    /// A record for `cell` with the identifying fields filled in.
    pub fn for_cell(cell: &Cell, status: CellStatus) -> CellRecord {
        CellRecord {
            cell_id: cell.id.clone(),
            kernel: cell.kernel.clone(),
            kernel_file: cell.kernel_file.clone(),
            strategy: cell.strategy.clone(),
            variant: cell.variant(),
            settings: cell.settings.clone(),
            model: cell.model.clone(),
            repeat: cell.repeat,
            seed: cell.seed,
            studies: cell.studies.clone(),
            status,
            over_budget: None,
            run_dir: None,
            attempts: 0,
            elapsed_s: 0.0,
            llm_tokens: 0,
            llm_cost_usd: 0.0,
            error: None,
            gpu: None,
            recorded: now_rfc3339(),
            result: None,
        }
    }

    /// The typed view of the run's result (empty when there is none).
    pub fn run_result(&self) -> RunResult {
        self.result
            .as_ref()
            .map(RunResult::from_value)
            .unwrap_or_default()
    }
}

/// `<out>/cells.jsonl` plus the per-cell copies.
#[derive(Debug, Clone)]
pub struct Ledger {
    out: PathBuf,
}

impl Ledger {
    pub fn new(out: impl Into<PathBuf>) -> Ledger {
        Ledger { out: out.into() }
    }

    pub fn path(&self) -> PathBuf {
        self.out.join("cells.jsonl")
    }

    /// Writes the record: first the per-cell copy (atomically, by rename), then one line appended to the
    /// JSONL file with a single write so concurrent writers do not interleave within a line.
    pub fn append(&self, record: &CellRecord) -> Result<(), ExperimentError> {
        let cell_dir = self.out.join("cells").join(record.cell_id.as_str());
        std::fs::create_dir_all(&cell_dir)
            .map_err(|e| ExperimentError::io(&cell_dir, "creating the cell directory", e))?;
        let json = serde_json::to_string(record).map_err(|e| ExperimentError::Option {
            detail: format!("cannot serialise the record of {}: {e}", record.cell_id),
        })?;
        let copy = cell_dir.join("cell-record.json");
        let tmp = cell_dir.join("cell-record.json.tmp");
        std::fs::write(&tmp, &json)
            .map_err(|e| ExperimentError::io(&tmp, "writing the cell record", e))?;
        std::fs::rename(&tmp, &copy)
            .map_err(|e| ExperimentError::io(&copy, "writing the cell record", e))?;

        let path = self.path();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| ExperimentError::io(&path, "opening the ledger", e))?;
        let line = format!("{json}\n");
        file.write_all(line.as_bytes())
            .map_err(|e| ExperimentError::io(&path, "appending to the ledger", e))
    }

    /// The latest record of every cell: `cells.jsonl` lines (last wins), completed by per-cell copies whose
    /// line is missing or older. A truncated last line (a writer killed mid-write) is skipped with a warning;
    /// any other malformed line is an error naming it.
    pub fn load(&self) -> Result<BTreeMap<CellId, CellRecord>, ExperimentError> {
        let mut records = BTreeMap::new();
        let path = self.path();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let lines: Vec<&str> = text.lines().collect();
                for (i, line) in lines.iter().enumerate() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    match serde_json::from_str::<CellRecord>(line) {
                        Ok(r) => {
                            records.insert(r.cell_id.clone(), r);
                        }
                        Err(e) if i + 1 == lines.len() && !text.ends_with('\n') => {
                            tracing::warn!(path = %path.display(), "ignoring a truncated last line: {e}");
                        }
                        Err(e) => {
                            return Err(ExperimentError::Ledger {
                                path: path.clone(),
                                line: i + 1,
                                detail: e.to_string(),
                            });
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ExperimentError::io(&path, "reading the ledger", e)),
        }
        self.merge_cell_copies(&mut records)?;
        Ok(records)
    }

    fn merge_cell_copies(
        &self,
        records: &mut BTreeMap<CellId, CellRecord>,
    ) -> Result<(), ExperimentError> {
        let cells = self.out.join("cells");
        let Ok(entries) = std::fs::read_dir(&cells) else {
            return Ok(());
        };
        for entry in entries.filter_map(Result::ok) {
            let copy = entry.path().join("cell-record.json");
            let Ok(text) = std::fs::read_to_string(&copy) else {
                continue;
            };
            let record: CellRecord = match serde_json::from_str(&text) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(path = %copy.display(), "ignoring an unreadable cell record: {e}");
                    continue;
                }
            };
            let newer = records
                .get(&record.cell_id)
                .is_none_or(|r| r.recorded < record.recorded);
            if newer {
                records.insert(record.cell_id.clone(), record);
            }
        }
        Ok(())
    }
}

pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `path` relative to `base` when it lies under it (records stay valid when the experiment directory moves).
pub(crate) fn relative_path(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Budget;

    fn cell(id: &str) -> Cell {
        Cell {
            id: CellId(id.into()),
            studies: vec!["s".into()],
            kernel: "k".into(),
            kernel_file: "k.cu".into(),
            kernel_choice: None,
            strategy: "explicit".into(),
            grid: BTreeMap::new(),
            settings: BTreeMap::new(),
            model: "scripted:x.toml".into(),
            repeat: 0,
            seed: 0,
            budget: Budget::default(),
        }
    }

    #[test]
    fn the_last_record_of_a_cell_wins_and_lines_are_plain_json() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::new(dir.path());
        ledger
            .append(&CellRecord::for_cell(&cell("a"), CellStatus::Crashed))
            .unwrap();
        let mut done = CellRecord::for_cell(&cell("a"), CellStatus::Finished);
        done.recorded = "9999".into();
        ledger.append(&done).unwrap();
        ledger
            .append(&CellRecord::for_cell(&cell("b"), CellStatus::Failed))
            .unwrap();
        let records = ledger.load().unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[&CellId("a".into())].status, CellStatus::Finished);
        let text = std::fs::read_to_string(ledger.path()).unwrap();
        assert_eq!(text.lines().count(), 3);
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(v["status"], "crashed");
        assert_eq!(v["cell_id"], "a");
    }

    #[test]
    fn a_record_missing_from_the_jsonl_is_found_in_the_cell_directory() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::new(dir.path());
        ledger
            .append(&CellRecord::for_cell(&cell("a"), CellStatus::Finished))
            .unwrap();
        std::fs::remove_file(ledger.path()).unwrap();
        assert_eq!(ledger.load().unwrap().len(), 1);
    }

    #[test]
    fn a_truncated_last_line_is_skipped_but_a_bad_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::new(dir.path());
        ledger
            .append(&CellRecord::for_cell(&cell("a"), CellStatus::Finished))
            .unwrap();
        let mut f = OpenOptions::new().append(true).open(ledger.path()).unwrap();
        write!(f, "{{\"cell_id\": \"b\", \"ker").unwrap();
        assert_eq!(ledger.load().unwrap().len(), 1);
        writeln!(f).unwrap();
        ledger
            .append(&CellRecord::for_cell(&cell("c"), CellStatus::Finished))
            .unwrap();
        let e = ledger.load().unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
    }
}
