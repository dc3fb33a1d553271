//! Unit tests of report.rs.

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
        gpu: None,
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
/// gains (1 − 1/speedup): 0, 50, 75, 0 % → mean 31.25; deviations −31.25, 18.75, 43.75, −31.25 → squares
///   976.5625 + 351.5625 + 1914.0625 + 976.5625 = 4218.75, / 3 = 1406.25, std = 37.5
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
    assert!(close(g.mean_gain_pct, 31.25));
    assert!(close(g.std_gain_pct, 37.5));
    // t(3) = 3.182: 31.25 ± 3.182 × 37.5 / 2
    let [lo, hi] = g.gain_pct_ci95.unwrap();
    assert!((lo - (31.25 - 59.6625)).abs() < 1e-9 && (hi - (31.25 + 59.6625)).abs() < 1e-9);
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
    assert!(close(auto.mean_gain_pct, 25.0));
    let one = report
        .strategies
        .iter()
        .find(|s| s.variant == "one-prompt")
        .unwrap();
    assert_eq!(one.cells, 1, "crashed cells are not final and are left out");
}

#[test]
fn version_2_results_give_outcomes_intervals_and_the_thesis_gain_and_outages_are_left_out() {
    let mut kept = record("a", "k", "explicit", CellStatus::Finished, true, 1.0);
    kept.result = Some(serde_json::json!({
        "schema_version": 2, "status": "finished", "correct": true, "outcome": "no_improvement",
        "speedup": 1.0, "gain": 0.0, "speedup_ci95": [0.98, 1.02]
    }));
    let mut improved = record("b", "k", "explicit", CellStatus::Finished, true, 5.49);
    improved.result = Some(serde_json::json!({
        "schema_version": 2, "status": "finished", "correct": true, "outcome": "improved",
        "speedup": 5.49, "gain": 0.8179, "speedup_ci95": [5.3, 5.7]
    }));
    let outage = record("c", "k", "explicit", CellStatus::LlmUnavailable, false, 1.0);
    let no_gpu = record("d", "k", "explicit", CellStatus::NeedsGpu, false, 1.0);
    let report = Report::from_records(None, Some(4), [&kept, &improved, &outage, &no_gpu]);
    assert_eq!((report.llm_unavailable, report.needs_gpu), (1, 1));
    let g = &report.groups[0];
    assert_eq!(
        g.cells, 2,
        "an LLM outage is not a gain of 0: the cell is left out"
    );
    assert_eq!(g.no_improvement, 1);
    assert!(close(g.mean_gain_pct, (0.0 + 81.79) / 2.0));
    let single = Report::from_records(None, None, [&improved]);
    assert_eq!(single.groups[0].geomean_speedup_ci95, None);
    let md = report.render(ReportFormat::Markdown);
    assert!(md.contains("1 ended on an LLM outage"), "{md}");
    assert!(
        md.contains("| b | finished | improved | yes | 5.49 | 5.30 to 5.70 | 81.8 |"),
        "{md}"
    );
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
    assert!(md.contains("| k | autonomous[breakdown=0,replan=3] | m | 2 | 100% | 0 | 2.00 [2.00, 2.00] | 2.00 | 50.0 ± 0.0 [50.0, 50.0] |"), "{md}");
    assert!(!md.contains("(speedup − 1)"), "{md}");
    let csv = report.render(ReportFormat::Csv);
    assert!(csv.contains("kernel_strategy_model,k,\"autonomous[breakdown=0,replan=3]\",m,2,2,0,0,1,0,2,2,2,2,50,0,50,50,"), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&report.render(ReportFormat::Json)).unwrap();
    assert_eq!(json["strategies"][0]["geomean_speedup"], 2.0);
}
