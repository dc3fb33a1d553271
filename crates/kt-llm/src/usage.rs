//! Token and cost accounting: [`Usage`] for one call, [`UsageTotals`] summed per node and per run.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Tokens of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// True when the server sent no `usage` and the counts are estimated from the text length.
    #[serde(default)]
    pub estimated: bool,
}

/// Roughly four characters per token for English and code with common BPE vocabularies: good enough to
/// budget, and flagged as an estimate wherever it is used.
const CHARS_PER_TOKEN: usize = 4;

impl Usage {
    /// Estimates token counts from character counts.
    pub fn estimate(prompt_chars: usize, answer_chars: usize) -> Self {
        Usage {
            input_tokens: prompt_chars.div_ceil(CHARS_PER_TOKEN) as u64,
            output_tokens: answer_chars.div_ceil(CHARS_PER_TOKEN) as u64,
            estimated: true,
        }
    }
}

/// Sums over many calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageSum {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Calls whose token counts were estimated.
    pub estimated_calls: u64,
    /// Cost of the calls whose model has a price.
    pub cost_usd: f64,
    /// Calls whose model has no price: when non-zero, `cost_usd` is a lower bound.
    pub unpriced_calls: u64,
    #[serde(with = "duration_secs")]
    pub wall_time: Duration,
}

impl UsageSum {
    pub fn add(&mut self, usage: &Usage, cost_usd: Option<f64>, wall_time: Duration) {
        self.calls += 1;
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.estimated_calls += u64::from(usage.estimated);
        match cost_usd {
            Some(c) => self.cost_usd += c,
            None => self.unpriced_calls += 1,
        }
        self.wall_time += wall_time;
    }

    /// The cost if every call was priced, else `None` (unknown is not zero).
    pub fn known_cost(&self) -> Option<f64> {
        (self.unpriced_calls == 0).then_some(self.cost_usd)
    }

    /// One line for humans: `tokens in 120 / out 45 (estimated), 1.2s, $0.000420`.
    pub fn summary(&self) -> String {
        let est = if self.estimated_calls > 0 {
            " (estimated)"
        } else {
            ""
        };
        let cost = match (self.known_cost(), self.calls) {
            (Some(c), _) => format!("${c:.6}"),
            (None, n) if self.unpriced_calls == n => {
                "cost unknown (model not in the price table)".to_string()
            }
            (None, _) => format!(
                ">= ${:.6} ({} call(s) unpriced)",
                self.cost_usd, self.unpriced_calls
            ),
        };
        format!(
            "tokens in {} / out {}{est}, {:.2}s, {cost}",
            self.input_tokens,
            self.output_tokens,
            self.wall_time.as_secs_f64()
        )
    }
}

/// Usage of a whole run, and per node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    pub run: UsageSum,
    pub per_node: BTreeMap<String, UsageSum>,
}

impl UsageTotals {
    pub fn add(&mut self, node: &str, usage: &Usage, cost_usd: Option<f64>, wall_time: Duration) {
        self.run.add(usage, cost_usd, wall_time);
        self.per_node
            .entry(node.to_string())
            .or_default()
            .add(usage, cost_usd, wall_time);
    }

    /// Adds another run's totals (e.g. a resumed run's earlier part).
    pub fn merge(&mut self, other: &UsageTotals) {
        merge_sum(&mut self.run, &other.run);
        for (node, sum) in &other.per_node {
            merge_sum(self.per_node.entry(node.clone()).or_default(), sum);
        }
    }
}

fn merge_sum(into: &mut UsageSum, from: &UsageSum) {
    into.calls += from.calls;
    into.input_tokens += from.input_tokens;
    into.output_tokens += from.output_tokens;
    into.estimated_calls += from.estimated_calls;
    into.cost_usd += from.cost_usd;
    into.unpriced_calls += from.unpriced_calls;
    into.wall_time += from.wall_time;
}

mod duration_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Ok(Duration::from_secs_f64(secs.max(0.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_sum_per_node_and_per_run() {
        let mut t = UsageTotals::default();
        let u = Usage {
            input_tokens: 10,
            output_tokens: 5,
            estimated: false,
        };
        t.add("plan", &u, Some(0.5), Duration::from_secs(1));
        t.add("plan", &u, Some(0.25), Duration::from_secs(1));
        t.add(
            "apply",
            &Usage::estimate(40, 8),
            Some(1.0),
            Duration::from_secs(2),
        );
        assert_eq!(t.run.calls, 3);
        assert_eq!(t.run.input_tokens, 30);
        assert_eq!(t.run.output_tokens, 12);
        assert_eq!(t.run.estimated_calls, 1);
        assert_eq!(t.run.known_cost(), Some(1.75));
        assert_eq!(t.per_node["plan"].calls, 2);
        assert_eq!(t.per_node["apply"].output_tokens, 2);
    }

    #[test]
    fn one_unpriced_call_makes_the_total_cost_unknown_not_zero() {
        let mut t = UsageTotals::default();
        t.add("a", &Usage::default(), Some(0.1), Duration::ZERO);
        t.add("a", &Usage::default(), None, Duration::ZERO);
        assert_eq!(t.run.known_cost(), None);
        assert!(
            t.run.summary().contains("1 call(s) unpriced"),
            "{}",
            t.run.summary()
        );
        let mut only_unknown = UsageTotals::default();
        only_unknown.add("a", &Usage::default(), None, Duration::ZERO);
        assert!(only_unknown.run.summary().contains("cost unknown"));
    }

    #[test]
    fn estimate_rounds_up() {
        let u = Usage::estimate(9, 1);
        assert_eq!((u.input_tokens, u.output_tokens, u.estimated), (3, 1, true));
    }
}
