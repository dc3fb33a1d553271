//! The explicit strategy's necessity check, aggregated over an experiment (the thesis's Figure 12): before
//! each step the model is asked whether the step is worth doing for this kernel. The answers are read from
//! the steps of each explicit cell's `result.json`: a step with status `not_worth_it` was judged not worth it;
//! a step that was attempted (any other status, except `skipped`, whose dependency was not applied and which
//! was never asked) was judged worth it — or applied without asking, for steps whose strategy file sets
//! `ask_if_worth_it = false` (the block-size step of strategies/explicit.toml).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::ledger::CellRecord;

/// The answers for one step name over all explicit cells that reached it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Necessity {
    pub step: String,
    /// Judged worth it (and then attempted), or applied without asking.
    pub worth_it: usize,
    pub not_worth_it: usize,
}

/// Counts the answers in the final records of explicit-strategy cells, per step name in name order.
pub fn tally(records: &[&CellRecord]) -> Vec<Necessity> {
    let mut by_step: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.strategy == "explicit" && r.status.is_final())
    {
        let Some(steps) = r
            .result
            .as_ref()
            .and_then(|v| v.get("steps"))
            .and_then(|s| s.as_array())
        else {
            continue;
        };
        for step in steps {
            let name = step.get("name").and_then(|n| n.as_str()).unwrap_or("?");
            let counts = by_step.entry(name.to_string()).or_default();
            match step.get("status").and_then(|s| s.as_str()) {
                Some("not_worth_it") => counts.1 += 1,
                Some("skipped") | None => {}
                Some(_) => counts.0 += 1,
            }
        }
    }
    by_step
        .into_iter()
        .filter(|(_, (yes, no))| yes + no > 0)
        .map(|(step, (worth_it, not_worth_it))| Necessity {
            step,
            worth_it,
            not_worth_it,
        })
        .collect()
}

/// The report's section (nothing when no explicit cell has steps).
pub fn markdown(s: &mut String, rows: &[Necessity]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Necessity check (explicit strategy)\n\nPer step, how often the model judged it worth doing. Steps \
         applied without asking (`ask_if_worth_it = false`) count as worth it.\n"
    );
    let _ = writeln!(
        s,
        "| step | worth it | not worth it | worth it % |\n|---|---|---|---|"
    );
    for r in rows {
        let share = 100.0 * r.worth_it as f64 / (r.worth_it + r.not_worth_it) as f64;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {share:.0}% |",
            r.step, r.worth_it, r.not_worth_it
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;
    use crate::ledger::CellStatus;

    fn record(strategy: &str, steps: serde_json::Value) -> CellRecord {
        let cell = Cell::for_test(&format!("c-{strategy}"), strategy, "m");
        let mut r = CellRecord::for_cell(&cell, CellStatus::Finished);
        r.result = Some(serde_json::json!({ "status": "finished", "steps": steps }));
        r
    }

    #[test]
    fn answers_are_counted_per_step_from_explicit_cells_only() {
        let step = |name: &str, status: &str| serde_json::json!({"name": name, "status": status});
        let a = record(
            "explicit",
            serde_json::json!([
                step("vectorise", "accepted"),
                step("shared-memory", "not_worth_it"),
                step("unroll", "skipped")
            ]),
        );
        let b = record(
            "explicit",
            serde_json::json!([
                step("vectorise", "rejected"),
                step("shared-memory", "dropped")
            ]),
        );
        let other = record(
            "autonomous",
            serde_json::json!([step("vectorise", "not_worth_it")]),
        );
        let rows = tally(&[&a, &b, &other]);
        assert_eq!(
            rows,
            vec![
                Necessity {
                    step: "shared-memory".into(),
                    worth_it: 1,
                    not_worth_it: 1
                },
                Necessity {
                    step: "vectorise".into(),
                    worth_it: 2,
                    not_worth_it: 0
                },
            ]
        );
        let mut md = String::new();
        markdown(&mut md, &rows);
        assert!(md.contains("| shared-memory | 1 | 1 | 50% |"), "{md}");
    }
}
