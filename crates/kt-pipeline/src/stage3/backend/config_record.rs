//! What tuning made of a kernel's configurations, for `best.cu`'s header: per parameter the values that were
//! tried and those with which some configuration verified, and every configuration that failed with its
//! verdict — so a user who retunes the delivered kernel elsewhere never picks one that computes wrong results,
//! fails to compile, or hangs.

use std::collections::BTreeMap;

pub use kt_record::{ConfigRecord, FailedConfiguration};

use crate::stage3::tunable_code::TunableCode;

/// The record of a tuning result.
pub fn config_record(result: &kt_tuner::TuneResult) -> ConfigRecord {
    let mut verified_values: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for m in result.measurements.iter().filter(|m| m.verdict.is_ok()) {
        // the pipeline tunes integer parameters only (the LLM's rewrites declare them so)
        for (name, value) in &m.config.0 {
            let Some(value) = value.as_int() else {
                continue;
            };
            let values = verified_values.entry(name.clone()).or_default();
            if !values.contains(&value) {
                values.push(value);
            }
        }
    }
    for values in verified_values.values_mut() {
        values.sort_unstable();
    }
    let failed = kt_tuner::export::failed_configurations(result)
        .into_iter()
        .map(|f| FailedConfiguration {
            config: f
                .config
                .0
                .into_iter()
                .filter_map(|(n, v)| v.as_int().map(|i| (n, i)))
                .collect(),
            verdict: f.verdict.to_string(),
            detail: f.detail,
        })
        .collect();
    ConfigRecord {
        verified_values,
        failed,
    }
}

/// best.cu's lines about the configurations, after its `name = value (tried: …)` lines: per parameter the
/// values with which some configuration verified, then every failed configuration with its verdict.
/// Without a record (a run resumed after its tuning, a backend without records) the header says that
/// which configurations failed is not known.
pub fn header_lines(record: Option<&ConfigRecord>, kernel: &TunableCode) -> Vec<String> {
    let Some(r) = record else {
        return vec![
            "// Which configurations failed is not known to this run (its tuning records were not kept); retune \
             with verification before using other values."
                .into(),
        ];
    };
    let mut lines =
        vec!["// Values with which some configuration verified on every test:".to_string()];
    for p in &kernel.parameters {
        let values = r.verified_values.get(&p.name).map_or_else(
            || "none".to_string(),
            |v| {
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        );
        lines.push(format!("//   {}: {values}", p.name));
    }
    if r.failed.is_empty() {
        lines.push("// Every configuration tried verified on every test.".into());
        return lines;
    }
    lines.push(format!(
        "// Failed configurations ({}): never use these; they did not verify on this GPU.",
        r.failed.len()
    ));
    for f in &r.failed {
        let config: Vec<String> = f.config.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let detail = f.detail.lines().next().unwrap_or_default();
        let detail = if detail.is_empty() {
            String::new()
        } else {
            format!(" ({detail})")
        };
        lines.push(format!("//   {}: {}{detail}", config.join(" "), f.verdict));
    }
    lines
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stage3::{TunableParameter, default_grid_divisors};
    use kt_tuner::{Config, Measurement, Verdict};

    fn kernel() -> TunableCode {
        TunableCode {
            code: String::new(),
            parameters: vec![
                TunableParameter {
                    name: "block_size_x".into(),
                    values: vec![64, 128, 256],
                },
                TunableParameter {
                    name: "TILE".into(),
                    values: vec![16, 32],
                },
            ],
            restrictions: vec![],
            grid_divisors: default_grid_divisors(),
            dynamic_shared_memory: None,
            seeds: Vec::new(),
        }
    }

    fn m(bx: i64, tile: i64, verdict: Verdict) -> Measurement {
        let ok = verdict.is_ok();
        Measurement::synthetic(
            Config::ints([("block_size_x", bx), ("TILE", tile)]),
            verdict,
            ok.then_some(1.0),
        )
    }

    #[test]
    fn failed_configurations_are_listed_with_their_verdicts_and_only_verified_values_are_offered() {
        let wrong = Verdict::WrongAnswer {
            details: vec!["test t0: output C: 12 of 4096 elements wrong".into()],
            reports: vec![],
        };
        let measurements = vec![
            m(64, 16, Verdict::Ok),
            m(128, 16, Verdict::Ok),
            m(256, 32, wrong),
            m(
                64,
                32,
                Verdict::CompileError {
                    log: "error: too much shared data".into(),
                },
            ),
        ];
        let record = config_record(&crate::stage3::backend::tuned_outcome::tests::result(
            measurements,
            None,
        ));
        assert_eq!(record.verified_values["block_size_x"], vec![64, 128]);
        assert_eq!(record.verified_values["TILE"], vec![16]);
        let text = header_lines(Some(&record), &kernel()).join("\n");
        assert!(
            text.contains("//   block_size_x: 64, 128\n") && text.contains("//   TILE: 16\n"),
            "{text}"
        );
        assert!(
            text.contains("Failed configurations (2)")
                && text.contains("block_size_x=256 TILE=32: wrong answer")
                && text.contains("block_size_x=64 TILE=32: compile error"),
            "{text}"
        );
        let unknown = header_lines(None, &kernel()).join("\n");
        assert!(unknown.contains("not known"), "{unknown}");
    }
}
