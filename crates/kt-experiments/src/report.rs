//! `kt experiment report`: aggregates the ledger into per kernel × strategy × model rows and strategy-level
//! summaries, as Markdown, CSV or JSON.
//!
//! Per cell: it is *correct* when its run finished and `result.json` says `correct: true`. Its *speedup* is
//! the run's `speedup` (naive time ÷ best time, at the naive kernel's default launch) when correct, and 1.0
//! otherwise — a failed, crashed or over-budget cell leaves the user with the naive kernel. *Gain* is the
//! thesis's measure, (speedup − 1) × 100 %. Per group: correctness rate, geometric mean and median speedup,
//! mean ± sample standard deviation of the gain, fast_p for p = 1.0, 1.2, 2 (share of cells correct and more
//! than p× faster; see [`crate::stats::fast_p`]), mean % of measured peak of correct cells, mean
//! transformation time (the run's `wall_time_s.total`, else the coordinator's measured time), mean tokens and
//! mean known cost.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::design::Design;
use crate::error::ExperimentError;
use crate::expand::expand;
use crate::ledger::{CellRecord, CellStatus, Ledger};
use crate::schedule::Plan;
use crate::stats::{fast_p, gain_percent, geomean, mean, median, std_dev};

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
    pub speedup: f64,
    pub gain_pct: f64,
    pub percent_of_peak: Option<f64>,
    pub time_s: f64,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
}

impl CellPoint {
    pub fn from_record(r: &CellRecord) -> CellPoint {
        let result = r.run_result();
        let correct = r.status == CellStatus::Finished && result.correct == Some(true);
        let speedup = if correct {
            result
                .speedup
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(1.0)
        } else {
            1.0
        };
        CellPoint {
            cell_id: r.cell_id.to_string(),
            kernel: r.kernel.clone(),
            variant: r.variant.clone(),
            strategy: r.strategy.clone(),
            model: r.model.clone(),
            status: r.status,
            correct,
            speedup,
            gain_pct: gain_percent(speedup),
            percent_of_peak: result.percent_of_peak.filter(|_| correct),
            time_s: result
                .wall_time_s
                .as_ref()
                .and_then(|w| w.total)
                .unwrap_or(r.elapsed_s),
            tokens: result.tokens().unwrap_or(r.llm_tokens),
            cost_usd: result
                .cost_usd
                .or((r.llm_cost_usd > 0.0).then_some(r.llm_cost_usd)),
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
    pub crashed: usize,
    pub correct_rate: f64,
    pub geomean_speedup: Option<f64>,
    pub median_speedup: Option<f64>,
    pub mean_gain_pct: Option<f64>,
    pub std_gain_pct: Option<f64>,
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
            crashed: count(CellStatus::Crashed),
            correct_rate: if points.is_empty() {
                0.0
            } else {
                points.iter().filter(|p| p.correct).count() as f64 / points.len() as f64
            },
            geomean_speedup: geomean(&speedups),
            median_speedup: median(&speedups),
            mean_gain_pct: mean(&gains),
            std_gain_pct: std_dev(&gains),
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
            crashed: records.iter().filter(|r| !r.status.is_final()).count(),
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
        if self.crashed > 0 {
            let _ = writeln!(
                s,
                "{} of them crashed and are left out below; rerun the experiment to resume them.",
                self.crashed
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Speedup = naive time ÷ best time at the naive kernel's default launch; a cell that is not correct counts \
             as 1.0× (the naive kernel stays). Gain = (speedup − 1) × 100 %, the thesis's measure; ± is the sample \
             standard deviation. fast_p = share of cells correct and more than p× faster. % peak = mean share of the \
             measured peak (bandwidth or FLOP/s) reached by correct cells' best kernels. Time, tokens and cost are \
             means per cell.\n"
        );
        let _ = writeln!(s, "## By strategy\n");
        table(&mut s, &self.strategies, false, false);
        let _ = writeln!(s, "\n## By strategy and model\n");
        table(&mut s, &self.strategy_models, false, true);
        let _ = writeln!(s, "\n## By kernel, strategy and model\n");
        table(&mut s, &self.groups, true, true);
        s
    }

    fn csv(&self) -> String {
        let mut s = String::from(
            "level,kernel,strategy,model,cells,finished,failed,over_budget,crashed,correct_rate,geomean_speedup,median_speedup,mean_gain_pct,std_gain_pct,fast_1.0,fast_1.2,fast_2,mean_percent_of_peak,mean_time_s,mean_tokens,mean_cost_usd,total_cost_usd\n",
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
                    r.crashed.to_string(),
                    format!("{}", r.correct_rate),
                    num(r.geomean_speedup),
                    num(r.median_speedup),
                    num(r.mean_gain_pct),
                    num(r.std_gain_pct),
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
        "geomean ×",
        "median ×",
        "gain % (mean ± std)",
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
        let gain = match (r.mean_gain_pct, r.std_gain_pct) {
            (Some(m), Some(sd)) => format!("{m:+.1} ± {sd:.1}"),
            (Some(m), None) => format!("{m:+.1}"),
            _ => "–".into(),
        };
        cells.extend([
            r.cells.to_string(),
            pct(Some(r.correct_rate)),
            f(r.geomean_speedup, 2),
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cell::CellId;

    fn record(
        id: &str,
        kernel: &str,
        variant: &str,
        status: CellStatus,
        correct: bool,
        speedup: f64,
    ) -> CellRecord {
        CellRecord {
            cell_id: CellId(id.into()),
            kernel: kernel.into(),
            kernel_file: format!("{kernel}.cu"),
            strategy: variant.split('[').next().unwrap_or(variant).into(),
            variant: variant.into(),
            settings: BTreeMap::new(),
            model: "m".into(),
            repeat: 0,
            seed: 0,
            studies: vec![],
            status,
            over_budget: None,
            run_dir: None,
            attempts: 1,
            elapsed_s: 99.0,
            llm_tokens: 0,
            llm_cost_usd: 0.0,
            error: None,
            recorded: String::new(),
            result: Some(serde_json::json!({
                "status": if status == CellStatus::Finished { "finished" } else { "failed" },
                "correct": correct, "speedup": speedup, "percent_of_peak": 40.0,
                "tokens_in": 1000, "tokens_out": 500, "cost_usd": 0.25, "wall_time_s": {"total": 100.0}
            })),
        }
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    /// Four cells of one group, computed by hand:
    /// speedups used: 1.0, 2.0, 4.0, and 1.0 (the 3.0× cell is incorrect, so it counts as 1.0)
    /// geomean = (1·2·4·1)^(1/4) = 8^(1/4) = 1.681792830507429
    /// median = (1 + 2) / 2 = 1.5
    /// gains: 0, 100, 300, 0 → mean 100; deviations −100, 0, 200, −100 → squares 10000+0+40000+10000 = 60000,
    ///   / 3 = 20000, std = 141.4213562373095
    /// fast_1.0: 2/4 (2.0, 4.0); fast_1.2: 2/4; fast_2: 1/4 (only 4.0 is strictly above 2)
    /// correct: 3/4; % peak over the 3 correct: 40; time 100; tokens 1500; cost 0.25 each, 1.00 in total
    #[test]
    fn group_numbers_match_the_hand_computed_ones() {
        let records = [
            record("a", "k", "explicit", CellStatus::Finished, true, 1.0),
            record("b", "k", "explicit", CellStatus::Finished, true, 2.0),
            record("c", "k", "explicit", CellStatus::Finished, true, 4.0),
            record("d", "k", "explicit", CellStatus::Finished, false, 3.0),
        ];
        let report = Report::from_records(None, Some(4), &records);
        assert_eq!(report.groups.len(), 1);
        let g = &report.groups[0];
        assert_eq!(g.cells, 4);
        assert!((g.correct_rate - 0.75).abs() < 1e-12);
        assert!(close(g.geomean_speedup, 1.681_792_830_507_429));
        assert!(close(g.median_speedup, 1.5));
        assert!(close(g.mean_gain_pct, 100.0));
        assert!(close(g.std_gain_pct, 141.421_356_237_309_5));
        assert!(close(g.fast_p[0], 0.5));
        assert!(close(g.fast_p[1], 0.5));
        assert!(close(g.fast_p[2], 0.25));
        assert!(close(g.mean_percent_of_peak, 40.0));
        assert!(close(g.mean_time_s, 100.0));
        assert!(close(g.mean_tokens, 1500.0));
        assert!(close(g.total_cost_usd, 1.0));
    }

    #[test]
    fn strategy_summaries_span_kernels_and_failed_cells_count_as_no_gain() {
        let records = [
            record(
                "a",
                "k1",
                "autonomous[replan=3]",
                CellStatus::Finished,
                true,
                2.0,
            ),
            record(
                "b",
                "k2",
                "autonomous[replan=3]",
                CellStatus::Failed,
                true,
                5.0,
            ),
            record("c", "k1", "one-prompt", CellStatus::Finished, true, 1.1),
            record("z", "k1", "one-prompt", CellStatus::Crashed, false, 1.0),
        ];
        let report = Report::from_records(None, None, &records);
        assert_eq!(report.groups.len(), 3);
        assert_eq!((report.recorded, report.crashed), (4, 1));
        let auto = report
            .strategies
            .iter()
            .find(|s| s.variant.starts_with("autonomous"))
            .unwrap();
        assert_eq!((auto.cells, auto.failed), (2, 1));
        assert!(close(auto.geomean_speedup, 2.0_f64.sqrt()));
        assert!(close(auto.mean_gain_pct, 50.0));
        let one = report
            .strategies
            .iter()
            .find(|s| s.variant == "one-prompt")
            .unwrap();
        assert_eq!(one.cells, 1, "crashed cells are not final and are left out");
    }

    #[test]
    fn renderings_carry_the_numbers() {
        let records = [
            record(
                "a",
                "k",
                "autonomous[breakdown=0,replan=3]",
                CellStatus::Finished,
                true,
                2.0,
            ),
            record(
                "b",
                "k",
                "autonomous[breakdown=0,replan=3]",
                CellStatus::Finished,
                true,
                2.0,
            ),
        ];
        let report = Report::from_records(Some("t".into()), None, &records);
        let md = report.render(ReportFormat::Markdown);
        assert!(md.contains("| k | autonomous[breakdown=0,replan=3] | m | 2 | 100% | 2.00 | 2.00 | +100.0 ± 0.0 |"), "{md}");
        let csv = report.render(ReportFormat::Csv);
        assert!(csv.contains("kernel_strategy_model,k,\"autonomous[breakdown=0,replan=3]\",m,2,2,0,0,0,1,2,2,100,0,"), "{csv}");
        let json: serde_json::Value =
            serde_json::from_str(&report.render(ReportFormat::Json)).unwrap();
        assert_eq!(json["strategies"][0]["geomean_speedup"], 2.0);
    }
}
