//! Per-cell budgets (wall time, tokens, dollars) and the tally of a running cell's LLM use, read from the
//! `llm.jsonl` its run appends to. Reading the file rather than asking the child keeps the boundary to the
//! pipeline a file format: the coordinator needs no channel into the run.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ExperimentError;

/// Limits for one cell. `None` means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Wall time summed over all attempts of the cell (a resumed cell keeps its earlier time).
    #[serde(with = "opt_secs", default)]
    pub time: Option<Duration>,
    /// Input plus output tokens over all LLM calls of the run.
    pub tokens: Option<u64>,
    /// Cost over all LLM calls whose cost is known.
    pub dollars: Option<f64>,
}

/// Which limit a cell ran over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    Time,
    Tokens,
    Dollars,
}

impl std::fmt::Display for BudgetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BudgetKind::Time => "time",
            BudgetKind::Tokens => "tokens",
            BudgetKind::Dollars => "dollars",
        })
    }
}

impl Budget {
    /// The first limit that `elapsed` and `llm` exceed, if any.
    pub fn exceeded(&self, elapsed: Duration, llm: &LlmTally) -> Option<BudgetKind> {
        if self.time.is_some_and(|t| elapsed > t) {
            return Some(BudgetKind::Time);
        }
        if self.tokens.is_some_and(|t| llm.tokens > t) {
            return Some(BudgetKind::Tokens);
        }
        if self.dollars.is_some_and(|d| llm.dollars > d) {
            return Some(BudgetKind::Dollars);
        }
        None
    }

    /// Whether any LLM limit is set (only then is `llm.jsonl` worth watching).
    pub fn watches_llm(&self) -> bool {
        self.tokens.is_some() || self.dollars.is_some()
    }
}

/// Parses `90s`, `30m`, `4h`, `1h30m`, `500ms` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let mut total = 0.0_f64;
    let mut rest = text;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return None;
        }
        let value: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return None,
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

/// Running totals of a run's `llm.jsonl`, read incrementally: each update reads only the complete lines
/// appended since the last one, so watching a long run stays cheap.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmTally {
    pub calls: u64,
    pub tokens: u64,
    pub dollars: f64,
    #[serde(skip)]
    offset: u64,
}

/// The fields of a kt-llm `Record` line that budgets need; everything else is ignored so that the record
/// format can grow.
#[derive(Deserialize)]
struct UsageLine {
    #[serde(default)]
    usage: Option<UsageTokens>,
    #[serde(default)]
    cost_usd: Option<f64>,
}

#[derive(Deserialize)]
struct UsageTokens {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

impl LlmTally {
    /// Reads the lines appended to `path` since the last call. A missing file is an empty record (the run
    /// has not called the LLM yet); a line that is not JSON is skipped, since a half-written last line is
    /// normal while the run is writing.
    pub fn update(&mut self, path: &Path) -> Result<(), ExperimentError> {
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(ExperimentError::io(path, "opening the LLM record", e)),
        };
        file.seek(SeekFrom::Start(self.offset))
            .map_err(|e| ExperimentError::io(path, "seeking in the LLM record", e))?;
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| ExperimentError::io(path, "reading the LLM record", e))?;
        // Only complete lines count; the rest is read again next time.
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        for line in text[..complete].lines().filter(|l| !l.trim().is_empty()) {
            let Ok(record) = serde_json::from_str::<UsageLine>(line) else {
                tracing::debug!(path = %path.display(), "skipping a line of the LLM record that is not JSON");
                continue;
            };
            self.calls += 1;
            if let Some(u) = record.usage {
                self.tokens += u.input_tokens + u.output_tokens;
            }
            self.dollars += record.cost_usd.unwrap_or(0.0);
        }
        self.offset += complete as u64;
        Ok(())
    }
}

mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.map(Duration::from_secs_f64))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn durations_accept_units_and_compounds() {
        assert_eq!(parse_duration("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2d"), Some(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("1x"), None);
        assert_eq!(parse_duration("h"), None);
    }

    #[test]
    fn tally_reads_only_complete_new_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("llm.jsonl");
        let mut tally = LlmTally::default();
        tally.update(&path).unwrap();
        assert_eq!(tally.calls, 0);

        let mut f = File::create(&path).unwrap();
        writeln!(
            f,
            r#"{{"node":"a","usage":{{"input_tokens":100,"output_tokens":20}},"cost_usd":0.5}}"#
        )
        .unwrap();
        write!(f, r#"{{"node":"b","usage":{{"input_tokens":7"#).unwrap();
        f.flush().unwrap();
        tally.update(&path).unwrap();
        assert_eq!((tally.calls, tally.tokens), (1, 120));

        writeln!(f, r#","output_tokens":3}},"cost_usd":null}}"#).unwrap();
        f.flush().unwrap();
        tally.update(&path).unwrap();
        assert_eq!((tally.calls, tally.tokens), (2, 130));
        assert!((tally.dollars - 0.5).abs() < 1e-12);
    }

    #[test]
    fn the_first_exceeded_limit_is_reported() {
        let budget = Budget {
            time: Some(Duration::from_secs(10)),
            tokens: Some(100),
            dollars: Some(1.0),
        };
        let mut llm = LlmTally::default();
        assert_eq!(budget.exceeded(Duration::from_secs(5), &llm), None);
        llm.tokens = 101;
        assert_eq!(
            budget.exceeded(Duration::from_secs(5), &llm),
            Some(BudgetKind::Tokens)
        );
        assert_eq!(
            budget.exceeded(Duration::from_secs(11), &llm),
            Some(BudgetKind::Time)
        );
        llm.tokens = 0;
        llm.dollars = 1.5;
        assert_eq!(
            budget.exceeded(Duration::from_secs(1), &llm),
            Some(BudgetKind::Dollars)
        );
    }
}
