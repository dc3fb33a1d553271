//! The explicit strategy's necessity check, aggregated over an experiment (the thesis's Figure 12): before
//! each step the model is asked whether the step is worth doing for this kernel. The answers are read from
//! the steps of each explicit cell's `result.json`. Runs that record them (`steps[].worth_it_asked` and
//! `steps[].worth_it`) are counted exactly: a yes, a no, a step applied without asking, or an asked question
//! without a usable answer. Older runs are read from the step's status: `not_worth_it` was judged not worth it;
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
    /// Of `worth_it`: applied without asking (`ask_if_worth_it = false`), from runs that record it.
    pub not_asked: usize,
    /// Asked, but no usable answer came (the step was not done); not in either count above.
    pub no_answer: usize,
}

/// One step's answer.
enum Answer {
    Yes,
    No,
    NotAsked,
    Unanswered,
    /// Never reached the question (a dependency was not applied).
    Skipped,
}

fn answer(step: &serde_json::Value) -> Answer {
    let status = step.get("status").and_then(|s| s.as_str());
    if status == Some("skipped") || status.is_none() {
        return Answer::Skipped;
    }
    match step.get("worth_it_asked").and_then(|a| a.as_bool()) {
        Some(true) => match step.get("worth_it").and_then(|w| w.as_bool()) {
            Some(true) => Answer::Yes,
            Some(false) => Answer::No,
            None => Answer::Unanswered,
        },
        Some(false) => Answer::NotAsked,
        // recorded before the answers were: inferred from the status
        None if status == Some("not_worth_it") => Answer::No,
        None => Answer::Yes,
    }
}

/// Counts the answers in the final records of explicit-strategy cells, per step name in name order.
pub fn tally(records: &[&CellRecord]) -> Vec<Necessity> {
    let mut by_step: BTreeMap<String, [usize; 4]> = BTreeMap::new();
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
            match answer(step) {
                Answer::Yes => counts[0] += 1,
                Answer::No => counts[1] += 1,
                Answer::NotAsked => {
                    counts[0] += 1;
                    counts[2] += 1;
                }
                Answer::Unanswered => counts[3] += 1,
                Answer::Skipped => {}
            }
        }
    }
    by_step
        .into_iter()
        .filter(|(_, [yes, no, _, unanswered])| yes + no + unanswered > 0)
        .map(
            |(step, [worth_it, not_worth_it, not_asked, no_answer])| Necessity {
                step,
                worth_it,
                not_worth_it,
                not_asked,
                no_answer,
            },
        )
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
         applied without asking (`ask_if_worth_it = false`) count as worth it and are also shown apart; questions \
         without a usable answer are counted apart.\n"
    );
    let _ = writeln!(
        s,
        "| step | worth it | not worth it | worth it % | applied without asking | no usable answer |\n\
         |---|---|---|---|---|---|"
    );
    for r in rows {
        let answered = r.worth_it + r.not_worth_it;
        let share = if answered > 0 {
            format!("{:.0}%", 100.0 * r.worth_it as f64 / answered as f64)
        } else {
            "-".into()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {share} | {} | {} |",
            r.step, r.worth_it, r.not_worth_it, r.not_asked, r.no_answer
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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
                    not_worth_it: 1,
                    not_asked: 0,
                    no_answer: 0,
                },
                Necessity {
                    step: "vectorise".into(),
                    worth_it: 2,
                    not_worth_it: 0,
                    not_asked: 0,
                    no_answer: 0,
                },
            ]
        );
        let mut md = String::new();
        markdown(&mut md, &rows);
        assert!(
            md.contains("| shared-memory | 1 | 1 | 50% | 0 | 0 |"),
            "{md}"
        );
    }

    #[test]
    fn recorded_answers_are_counted_exactly() {
        let step = |name: &str, status: &str, asked: bool, worth: serde_json::Value| serde_json::json!({"name": name, "status": status, "worth_it_asked": asked, "worth_it": worth});
        let a = record(
            "explicit",
            serde_json::json!([
                // asked, yes, then the candidate failed: still a yes
                step("tile", "dropped", true, true.into()),
                // asked, no usable answer: the step was refused, but the model never said no
                step("unroll", "not_worth_it", true, serde_json::Value::Null),
                step("block size", "accepted", false, serde_json::Value::Null),
            ]),
        );
        let b = record(
            "explicit",
            serde_json::json!([step("tile", "not_worth_it", true, false.into())]),
        );
        let rows = tally(&[&a, &b]);
        let row = |n: &str| rows.iter().find(|r| r.step == n).unwrap().clone();
        assert_eq!((row("tile").worth_it, row("tile").not_worth_it), (1, 1));
        assert_eq!(
            (
                row("unroll").worth_it,
                row("unroll").not_worth_it,
                row("unroll").no_answer
            ),
            (0, 0, 1)
        );
        assert_eq!(
            (row("block size").worth_it, row("block size").not_asked),
            (1, 1)
        );
        let mut md = String::new();
        markdown(&mut md, &rows);
        assert!(md.contains("| unroll | 0 | 0 | - | 0 | 1 |"), "{md}");
    }
}
