//! `kt experiment report`: aggregates the ledger into per kernel × strategy × model rows and strategy-level
//! summaries, as Markdown, CSV or JSON.
//!
//! Per cell: it is *correct* when its run finished and `result.json` says `correct: true` (schema_version 2:
//! the delivered kernel verified on every test). Its *outcome* is the run's `outcome` (`improved`,
//! `no_improvement`: the original kept, `not_verified`; absent in schema_version 1 results). Its *speedup* is
//! the run's `speedup` (t_naive ÷ t_best) when correct, and 1.0 otherwise — a failed or over-budget cell
//! leaves the user with the naive kernel — with the run's 95 % interval (`speedup_ci95`) when it has one. Its
//! *gain* is the thesis's measure, (t_naive − t_best) ÷ t_naive, in percent (the run's `gain`, else
//! 1 − 1/speedup). Per group: correctness rate, cells that kept the original, geometric mean speedup with a
//! 95 % interval over the cells, median speedup, mean ± sample standard deviation of the gain with a 95 %
//! interval, fast_p for p = 1.0, 1.2, 2 (share of cells correct and more than p× faster; see
//! [`crate::stats::fast_p`]), mean % of peak of correct cells, mean transformation time (the run's
//! `wall_time_s.total`, else the coordinator's measured time), mean tokens and mean known cost.
//!
//! Cells that ended for infrastructure reasons — a crash, no GPU, an LLM outage — are not results: they are
//! left out of every number, counted on their own, and resumed by the next `kt experiment run`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kt_record::RunRoofline;
use serde::Serialize;

use crate::design::Design;
use crate::error::ExperimentError;
use crate::expand::expand;
use crate::ledger::{CellRecord, CellStatus, Ledger};
use crate::necessity::Necessity;
use crate::schedule::Plan;
use crate::stats::{fast_p, gain_percent, geomean, geomean_ci95, mean, mean_ci95, median, std_dev};

/// The p of the fast_p columns.
pub const FAST_P: [f64; 3] = [1.0, 1.2, 2.0];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Markdown,
    Csv,
    Json,
}

impl std::str::FromStr for ReportFormat {
    type Err = ExperimentError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "md" | "markdown" => Ok(ReportFormat::Markdown),
            "csv" => Ok(ReportFormat::Csv),
            "json" => Ok(ReportFormat::Json),
            other => Err(ExperimentError::Option {
                detail: format!("unknown report format `{other}`: use md, csv or json"),
            }),
        }
    }
}

/// One cell as the report sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellPoint {
    pub cell_id: String,
    pub kernel: String,
    pub variant: String,
    pub strategy: String,
    pub model: String,
    pub status: CellStatus,
    pub correct: bool,
    /// The run's outcome (`improved`, `no_improvement`, `not_verified`); None for schema_version 1 results.
    pub outcome: Option<String>,
    /// t_naive / t_best (1.0 when not correct).
    pub speedup: f64,
    /// The run's 95 % interval of the speedup, when it measured one (and the cell is correct).
    pub speedup_ci95: Option<[f64; 2]>,
    /// The thesis's gain (t_naive − t_best) / t_naive, in percent (0 when not correct).
    pub gain_pct: f64,
    pub percent_of_peak: Option<f64>,
    pub time_s: f64,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    /// The run's roofline (device peaks, naive and best kernel), when it recorded one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roofline: Option<RunRoofline>,
}

impl CellPoint {
    pub fn from_record(r: &CellRecord) -> CellPoint {
        let result = r.run_result();
        let correct = r.status == CellStatus::Finished && result.correct;
        let speedup = if correct {
            result
                .speedup
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(1.0)
        } else {
            1.0
        };
        let gain_pct = match result.gain.filter(|g| correct && g.is_finite()) {
            Some(g) => g * 100.0,
            None => gain_percent(speedup),
        };
        CellPoint {
            cell_id: r.cell_id.to_string(),
            kernel: r.kernel.clone(),
            variant: r.variant.clone(),
            strategy: r.strategy.clone(),
            model: r.model.clone(),
            status: r.status,
            correct,
            outcome: result.outcome.map(|o| o.as_str().to_string()),
            speedup,
            speedup_ci95: result.speedup_ci95.filter(|_| correct),
            gain_pct,
            percent_of_peak: result.percent_of_peak.filter(|_| correct),
            time_s: result.total_wall_s().unwrap_or(r.elapsed_s),
            tokens: result.tokens().unwrap_or(r.llm_tokens),
            cost_usd: result
                .cost_usd
                .or((r.llm_cost_usd > 0.0).then_some(r.llm_cost_usd)),
            roofline: result.roofline.clone(),
        }
    }
}

/// The statistics of one group of cells.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// None in strategy-level summaries.
    pub kernel: Option<String>,
    pub variant: String,
    /// None in summaries over all models.
    pub model: Option<String>,
    pub cells: usize,
    pub finished: usize,
    pub failed: usize,
    pub over_budget: usize,
    pub correct_rate: f64,
    /// Cells whose run kept the original kernel (outcome `no_improvement`).
    pub no_improvement: usize,
    pub geomean_speedup: Option<f64>,
    /// 95 % interval of the geometric mean over the cells (two or more), or the run's own interval for a
    /// group of one cell.
    pub geomean_speedup_ci95: Option<[f64; 2]>,
    pub median_speedup: Option<f64>,
    /// The thesis's gain (t_naive − t_best) / t_naive in percent: mean, sample std and 95 % interval.
    pub mean_gain_pct: Option<f64>,
    pub std_gain_pct: Option<f64>,
    pub gain_pct_ci95: Option<[f64; 2]>,
    /// fast_p for p in [`FAST_P`], in that order.
    pub fast_p: Vec<Option<f64>>,
    pub mean_percent_of_peak: Option<f64>,
    pub mean_time_s: Option<f64>,
    pub mean_tokens: Option<f64>,
    pub mean_cost_usd: Option<f64>,
    pub total_cost_usd: Option<f64>,
}

impl Summary {
    pub fn of(
        kernel: Option<String>,
        variant: String,
        model: Option<String>,
        points: &[&CellPoint],
    ) -> Summary {
        let speedups: Vec<f64> = points.iter().map(|p| p.speedup).collect();
        let gains: Vec<f64> = points.iter().map(|p| p.gain_pct).collect();
        let pairs: Vec<(bool, f64)> = points.iter().map(|p| (p.correct, p.speedup)).collect();
        let peaks: Vec<f64> = points.iter().filter_map(|p| p.percent_of_peak).collect();
        let times: Vec<f64> = points.iter().map(|p| p.time_s).collect();
        let tokens: Vec<f64> = points.iter().map(|p| p.tokens as f64).collect();
        let costs: Vec<f64> = points.iter().filter_map(|p| p.cost_usd).collect();
        let count = |s: CellStatus| points.iter().filter(|p| p.status == s).count();
        Summary {
            kernel,
            variant,
            model,
            cells: points.len(),
            finished: count(CellStatus::Finished),
            failed: count(CellStatus::Failed),
            over_budget: count(CellStatus::OverBudget),
            correct_rate: if points.is_empty() {
                0.0
            } else {
                points.iter().filter(|p| p.correct).count() as f64 / points.len() as f64
            },
            no_improvement: points
                .iter()
                .filter(|p| p.outcome.as_deref() == Some("no_improvement"))
                .count(),
            geomean_speedup: geomean(&speedups),
            // A group of one cell has no spread between cells; its run's own interval belongs to the final
            // timing on one test, not to this speedup (summed over the tests): it is in the per-cell table.
            geomean_speedup_ci95: match points {
                [_] => None,
                _ => geomean_ci95(&speedups),
            },
            median_speedup: median(&speedups),
            mean_gain_pct: mean(&gains),
            std_gain_pct: std_dev(&gains),
            gain_pct_ci95: mean_ci95(&gains),
            fast_p: FAST_P.iter().map(|&p| fast_p(&pairs, p)).collect(),
            mean_percent_of_peak: mean(&peaks),
            mean_time_s: mean(&times),
            mean_tokens: mean(&tokens),
            mean_cost_usd: mean(&costs),
            total_cost_usd: (!costs.is_empty()).then(|| costs.iter().sum()),
        }
    }
}

/// Everything `kt experiment report` prints and plots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub experiment: Option<String>,
    /// Cells in the design, when the design is known.
    pub planned: Option<usize>,
    /// Cells with a record.
    pub recorded: usize,
    /// Recorded cells left out because they crashed (not final: a rerun resumes them).
    pub crashed: usize,
    /// Recorded cells left out because their run needs a GPU this machine lacks (a rerun resumes them).
    pub needs_gpu: usize,
    /// Recorded cells left out because the LLM service failed (a rerun resumes them).
    pub llm_unavailable: usize,
    /// The explicit strategy's necessity-check answers, per step (the thesis's Figure 12).
    pub necessity: Vec<Necessity>,
    /// Per kernel × strategy variant × model.
    pub groups: Vec<Summary>,
    /// Per strategy variant × model, over all kernels.
    pub strategy_models: Vec<Summary>,
    /// Per strategy variant, over all kernels and models.
    pub strategies: Vec<Summary>,
    pub points: Vec<CellPoint>,
}

impl Report {
    /// Aggregates records (the latest per cell). Crashed cells are left out: they are not final and a rerun
    /// will finish them; they show in `recorded` versus `planned`.
    pub fn from_records<'a>(
        experiment: Option<String>,
        planned: Option<usize>,
        records: impl IntoIterator<Item = &'a CellRecord>,
    ) -> Report {
        let records: Vec<&CellRecord> = records.into_iter().collect();
        let count = |s: CellStatus| records.iter().filter(|r| r.status == s).count();
        let points: Vec<CellPoint> = records
            .iter()
            .filter(|r| r.status.is_final())
            .map(|r| CellPoint::from_record(r))
            .collect();
        let mut groups: BTreeMap<(String, String, String), Vec<&CellPoint>> = BTreeMap::new();
        let mut strategy_models: BTreeMap<(String, String), Vec<&CellPoint>> = BTreeMap::new();
        let mut strategies: BTreeMap<String, Vec<&CellPoint>> = BTreeMap::new();
        for p in &points {
            groups
                .entry((p.kernel.clone(), p.variant.clone(), p.model.clone()))
                .or_default()
                .push(p);
            strategy_models
                .entry((p.variant.clone(), p.model.clone()))
                .or_default()
                .push(p);
            strategies.entry(p.variant.clone()).or_default().push(p);
        }
        Report {
            experiment,
            planned,
            recorded: records.len(),
            crashed: count(CellStatus::Crashed),
            needs_gpu: count(CellStatus::NeedsGpu),
            llm_unavailable: count(CellStatus::LlmUnavailable),
            necessity: crate::necessity::tally(&records),
            groups: groups
                .into_iter()
                .map(|((k, v, m), ps)| Summary::of(Some(k), v, Some(m), &ps))
                .collect(),
            strategy_models: strategy_models
                .into_iter()
                .map(|((v, m), ps)| Summary::of(None, v, Some(m), &ps))
                .collect(),
            strategies: strategies
                .into_iter()
                .map(|(v, ps)| Summary::of(None, v, None, &ps))
                .collect(),
            points,
        }
    }

    /// Loads the report of a design file (its results in `out`, default the design's default directory) or
    /// of an experiment directory (a directory holding `cells.jsonl`). Returns the report and the directory.
    pub fn load(path: &Path, out: Option<&Path>) -> Result<(Report, PathBuf), ExperimentError> {
        if path.is_dir() {
            let dir = path.to_path_buf();
            let plan: Option<Plan> = std::fs::read_to_string(dir.join("plan.json"))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok());
            let records = Ledger::new(&dir).load()?;
            if records.is_empty() {
                return Err(ExperimentError::NoRecords { dir });
            }
            let report = Report::from_records(
                plan.as_ref().map(|p| p.experiment.clone()),
                plan.as_ref().map(|p| p.cells.len()),
                records.values(),
            );
            return Ok((report, dir));
        }
        let design = Design::load(path)?;
        let dir = out.map_or_else(|| design.default_out_dir(), Path::to_path_buf);
        let records = Ledger::new(&dir).load()?;
        if records.is_empty() {
            return Err(ExperimentError::NoRecords { dir });
        }
        let planned = expand(&design)?.len();
        let report = Report::from_records(Some(design.name), Some(planned), records.values());
        Ok((report, dir))
    }

    pub fn render(&self, format: ReportFormat) -> String {
        match format {
            ReportFormat::Markdown => self.markdown(),
            ReportFormat::Csv => self.csv(),
            ReportFormat::Json => serde_json::to_string_pretty(self).unwrap_or_default(),
        }
    }

    fn markdown(&self) -> String {
        let mut s = String::new();
        let title = self.experiment.as_deref().unwrap_or("experiment");
        let _ = writeln!(s, "# Report: {title}\n");
        let planned = self
            .planned
            .map_or_else(String::new, |p| format!(" of {p} planned"));
        let _ = writeln!(s, "{} cells recorded{planned}.", self.recorded);
        for (n, what) in [
            (self.crashed, "crashed"),
            (
                self.needs_gpu,
                "stopped where they need a GPU this machine lacks",
            ),
            (self.llm_unavailable, "ended on an LLM outage"),
        ] {
            if n > 0 {
                let _ = writeln!(
                    s,
                    "{n} {what}: infrastructure failures, not results; they are left out below and the next \
                     `kt experiment run` resumes them."
                );
            }
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Correct = the delivered kernel verified on every test. Kept = runs that kept the original kernel \
             (no improvement). Speedup = t_naive ÷ t_best; a cell that is not correct counts as 1.0× (the naive \
             kernel stays); [95 % interval] over the group's cells (none for a single cell). Per cell, the run's own 95 % interval is that of its final timing on one test (10 separate launches each). Gain = \
             the thesis's measure, (t_naive − t_best) ÷ t_naive: the share of the naive time saved (a 2× speedup \
             is a 50 % gain); mean ± sample standard deviation [95 % interval of the mean]. fast_p = share of \
             cells correct and more than p× faster. % peak = mean share of the peak (bandwidth or FLOP/s) \
             reached by correct cells' best kernels. Time, tokens and cost are means per cell.\n"
        );
        let _ = writeln!(s, "## By strategy\n");
        table(&mut s, &self.strategies, false, false);
        let _ = writeln!(s, "\n## By strategy and model\n");
        table(&mut s, &self.strategy_models, false, true);
        let _ = writeln!(s, "\n## By kernel, strategy and model\n");
        table(&mut s, &self.groups, true, true);
        crate::necessity::markdown(&mut s, &self.necessity);
        cells_table(&mut s, &self.points);
        s
    }

    fn csv(&self) -> String {
        let mut s = String::from(
            "level,kernel,strategy,model,cells,finished,failed,over_budget,correct_rate,no_improvement,geomean_speedup,geomean_speedup_lo95,geomean_speedup_hi95,median_speedup,mean_gain_pct,std_gain_pct,gain_pct_lo95,gain_pct_hi95,fast_1.0,fast_1.2,fast_2,mean_percent_of_peak,mean_time_s,mean_tokens,mean_cost_usd,total_cost_usd\n",
        );
        for (level, rows) in [
            ("strategy", &self.strategies),
            ("strategy_model", &self.strategy_models),
            ("kernel_strategy_model", &self.groups),
        ] {
            for r in rows {
                let num = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v}"));
                let mut fields = vec![
                    level.to_string(),
                    csv_field(r.kernel.as_deref().unwrap_or("")),
                    csv_field(&r.variant),
                    csv_field(r.model.as_deref().unwrap_or("")),
                    r.cells.to_string(),
                    r.finished.to_string(),
                    r.failed.to_string(),
                    r.over_budget.to_string(),
                    format!("{}", r.correct_rate),
                    r.no_improvement.to_string(),
                    num(r.geomean_speedup),
                    num(r.geomean_speedup_ci95.map(|c| c[0])),
                    num(r.geomean_speedup_ci95.map(|c| c[1])),
                    num(r.median_speedup),
                    num(r.mean_gain_pct),
                    num(r.std_gain_pct),
                    num(r.gain_pct_ci95.map(|c| c[0])),
                    num(r.gain_pct_ci95.map(|c| c[1])),
                ];
                fields.extend(r.fast_p.iter().map(|v| num(*v)));
                fields.extend([
                    num(r.mean_percent_of_peak),
                    num(r.mean_time_s),
                    num(r.mean_tokens),
                    num(r.mean_cost_usd),
                    num(r.total_cost_usd),
                ]);
                let _ = writeln!(s, "{}", fields.join(","));
            }
        }
        s
    }
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

fn table(s: &mut String, rows: &[Summary], with_kernel: bool, with_model: bool) {
    let mut head = Vec::new();
    if with_kernel {
        head.push("kernel");
    }
    head.push("strategy");
    if with_model {
        head.push("model");
    }
    head.extend([
        "cells",
        "correct",
        "kept",
        "speedup × geomean [95 %]",
        "median ×",
        "gain % mean ± std [95 %]",
        "fast_1.0",
        "fast_1.2",
        "fast_2",
        "% peak",
        "time s",
        "tokens",
        "cost $",
    ]);
    let _ = writeln!(s, "| {} |", head.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
    let f = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "–".to_string(), |v| format!("{v:.digits$}"))
    };
    let pct = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{:.0}%", v * 100.0));
    for r in rows {
        let mut cells = Vec::new();
        if with_kernel {
            cells.push(r.kernel.clone().unwrap_or_default());
        }
        cells.push(r.variant.clone());
        if with_model {
            cells.push(r.model.clone().unwrap_or_default());
        }
        let mut gain = match (r.mean_gain_pct, r.std_gain_pct) {
            (Some(m), Some(sd)) => format!("{m:.1} ± {sd:.1}"),
            (Some(m), None) => format!("{m:.1}"),
            _ => "–".into(),
        };
        gain.push_str(&interval(r.gain_pct_ci95, 1));
        cells.extend([
            r.cells.to_string(),
            pct(Some(r.correct_rate)),
            r.no_improvement.to_string(),
            format!(
                "{}{}",
                f(r.geomean_speedup, 2),
                interval(r.geomean_speedup_ci95, 2)
            ),
            f(r.median_speedup, 2),
            gain,
        ]);
        cells.extend(r.fast_p.iter().map(|v| pct(*v)));
        cells.extend([
            f(r.mean_percent_of_peak, 1),
            f(r.mean_time_s, 1),
            f(r.mean_tokens, 0),
            f(r.mean_cost_usd, 3),
        ]);
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
}

/// ` [lo, hi]`, or nothing without an interval.
fn interval(ci: Option<[f64; 2]>, digits: usize) -> String {
    ci.map_or_else(String::new, |[lo, hi]| {
        format!(" [{lo:.digits$}, {hi:.digits$}]")
    })
}

/// One line per cell: what each run delivered, with the run's own interval.
fn cells_table(s: &mut String, points: &[CellPoint]) {
    let _ = writeln!(s, "\n## Cells\n");
    let _ = writeln!(
        s,
        "| cell | status | outcome | correct | speedup × (summed over the tests) | one test's 95 % interval × | gain % |\n|---|---|---|---|---|---|---|"
    );
    for p in points {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2} | {} | {:.1} |",
            p.cell_id,
            p.status.as_str(),
            p.outcome.as_deref().unwrap_or("–"),
            if p.correct { "yes" } else { "no" },
            p.speedup,
            p.speedup_ci95
                .map_or_else(|| "–".to_string(), |[lo, hi]| format!("{lo:.2} to {hi:.2}")),
            p.gain_pct
        );
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
