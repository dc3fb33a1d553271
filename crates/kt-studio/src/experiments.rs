//! Experiments beside the runs: a directory holding `cells.jsonl` (kt-experiments' ledger, one JSON line per
//! recorded cell, the latest line of a cell winning) is shown as a table of its cells. Read as plain JSON so
//! a ledger from an older or newer kt still shows what it has.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

/// One experiment directory and its cells.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    pub name: String,
    pub path: PathBuf,
    pub cells: Vec<Cell>,
}

/// One cell's latest record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub cell_id: String,
    pub kernel: String,
    pub variant: String,
    pub model: String,
    pub repeat: u64,
    pub status: String,
    pub speedup: Option<f64>,
    pub elapsed_s: Option<f64>,
    pub llm_tokens: Option<u64>,
    /// The run's directory name (a run id the studio can open when it lies under the runs directory).
    pub run: Option<String>,
}

/// Experiments in `base` itself and in its immediate subdirectories.
pub fn find_experiments(base: &Path) -> Vec<Experiment> {
    let mut dirs = vec![base.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(base) {
        let mut children: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        children.sort();
        dirs.extend(children);
    }
    dirs.into_iter()
        .filter_map(|d| {
            let text = std::fs::read_to_string(d.join("cells.jsonl")).ok()?;
            Some(Experiment {
                name: d
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default(),
                cells: cells(&text),
                path: d,
            })
        })
        .collect()
}

fn cells(ledger: &str) -> Vec<Cell> {
    let mut latest: BTreeMap<String, Cell> = BTreeMap::new();
    for v in ledger
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let cell = Cell {
            cell_id: text("cell_id"),
            kernel: text("kernel"),
            variant: text("variant"),
            model: text("model"),
            repeat: v["repeat"].as_u64().unwrap_or(0),
            status: text("status"),
            speedup: v["result"]["speedup"].as_f64(),
            elapsed_s: v["elapsed_s"].as_f64(),
            llm_tokens: v["llm_tokens"].as_u64(),
            run: v["run_dir"]
                .as_str()
                .and_then(|r| Path::new(r).file_name())
                .map(|n| n.to_string_lossy().to_string()),
        };
        latest.insert(cell.cell_id.clone(), cell);
    }
    latest.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_latest_line_of_each_cell_is_its_row() {
        let base = tempfile::tempdir().unwrap();
        let exp = base.path().join("exp1");
        std::fs::create_dir(&exp).unwrap();
        let line = |status: &str, speedup: Option<f64>| {
            json!({"cell_id": "c1", "kernel": "matmul", "variant": "autonomous", "model": "m", "repeat": 0,
                   "status": status, "elapsed_s": 3.5, "run_dir": "runs/20261125-r1",
                   "result": speedup.map(|s| json!({"speedup": s}))})
            .to_string()
        };
        let text = format!(
            "{}\n{}\nnot json\n",
            line("failed", None),
            line("finished", Some(2.5))
        );
        std::fs::write(exp.join("cells.jsonl"), text).unwrap();
        let found = find_experiments(base.path());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "exp1");
        assert_eq!(found[0].cells.len(), 1);
        assert_eq!(found[0].cells[0].status, "finished");
        assert_eq!(found[0].cells[0].speedup, Some(2.5));
        assert_eq!(found[0].cells[0].run.as_deref(), Some("20261125-r1"));
    }
}
