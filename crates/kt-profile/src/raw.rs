//! Reading ncu's `--csv --page raw` report: a header row of column names (identity columns such as "ID" and
//! "Kernel Name", then one column per metric), a row of units, then one row per profiled launch. Numbers may
//! carry thousands separators inside their quotes ("1,048,576"); a metric the device lacks reads "n/a".
//! Lines before the header (ncu's `==PROF==` messages, the program's own output) are skipped.

use crate::error::ProfileError;
use std::collections::BTreeMap;

/// One profiled launch: its identity columns as text, its metrics as numbers in base units (bytes,
/// nanoseconds, percent, counts); `None` where ncu printed "n/a" or nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawLaunch {
    pub columns: BTreeMap<String, String>,
    pub metrics: BTreeMap<String, Option<f64>>,
}

impl RawLaunch {
    pub fn column(&self, name: &str) -> Option<&str> {
        self.columns
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A launch described by metric values under ncu's names (as CUPTI inside kt's worker reports them), with
    /// the kernel's name as ncu's "Kernel Name" column.
    pub fn from_metrics(kernel: &str, values: &[(String, Option<f64>)]) -> RawLaunch {
        RawLaunch {
            columns: BTreeMap::from([("Kernel Name".to_string(), kernel.to_string())]),
            metrics: values.iter().cloned().collect(),
        }
    }

    /// A metric's value; `None` when it was not collected or not available.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).copied().flatten()
    }
}

/// Every launch in the report, in order.
pub fn parse_raw_csv(text: &str) -> Result<Vec<RawLaunch>, ProfileError> {
    let start = header_offset(text).ok_or_else(|| ProfileError::NoReport {
        excerpt: excerpt(text),
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(&text.as_bytes()[start..]);
    let mut records = reader.records();
    let header: Vec<String> = match records.next() {
        Some(Ok(r)) => r.iter().map(|f| f.trim().to_string()).collect(),
        _ => {
            return Err(ProfileError::NoReport {
                excerpt: excerpt(text),
            });
        }
    };
    let mut units: Vec<String> = vec![String::new(); header.len()];
    let mut launches = Vec::new();
    for record in records {
        // A line that is not a row of the table (a trailing ==PROF== message) is not an error.
        let Ok(record) = record else { continue };
        if record.len() != header.len() {
            continue;
        }
        let id = record.get(0).unwrap_or("").trim();
        if id.is_empty() {
            units = record.iter().map(|u| u.trim().to_string()).collect();
        } else if id.parse::<u64>().is_ok() {
            launches.push(launch(&header, &units, &record));
        }
    }
    Ok(launches)
}

fn launch(header: &[String], units: &[String], record: &csv::StringRecord) -> RawLaunch {
    let mut out = RawLaunch::default();
    for ((name, unit), value) in header.iter().zip(units).zip(record.iter()) {
        let value = value.trim();
        if is_metric(name) {
            let number = parse_number(value).map(|v| v * unit_factor(unit));
            out.metrics.insert(name.clone(), number);
        } else {
            out.columns.insert(name.clone(), value.to_string());
        }
    }
    out
}

/// ncu metric names are `unit__counter…`; identity columns ("Kernel Name", "Block Size") have no `__`.
fn is_metric(column: &str) -> bool {
    column.contains("__")
}

/// Where the header row starts: the first line whose first field is "ID".
fn header_offset(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let first = line.trim_start().split(',').next().unwrap_or("").trim();
        if first.trim_matches('"') == "ID" {
            return Some(offset + (line.len() - line.trim_start().len()));
        }
        offset += line.len();
    }
    None
}

/// "1,048,576" → 1048576; "n/a", "" and text → None.
fn parse_number(value: &str) -> Option<f64> {
    let cleaned: String = value.chars().filter(|c| *c != ',').collect();
    cleaned.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The factor to base units (bytes, nanoseconds) of a unit ncu printed. The command asks for base units
/// (`--print-units base`); this covers a report captured without it. Prefixes are SI (1000), as ncu's.
fn unit_factor(unit: &str) -> f64 {
    let numerator = unit.split('/').next().unwrap_or("");
    let time = match numerator {
        "nsecond" => Some(1.0),
        "usecond" => Some(1e3),
        "msecond" => Some(1e6),
        "second" => Some(1e9),
        _ => None,
    };
    if let Some(t) = time {
        // a duration; a rate (".../second") has the time below the line and stays as it is
        return if unit.contains('/') { 1.0 } else { t };
    }
    let mut chars = numerator.chars();
    let prefix = match chars.next() {
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        Some('T') => 1e12,
        _ => return 1.0,
    };
    let rest = chars.as_str();
    if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_lowercase()) {
        prefix
    } else {
        1.0
    }
}

fn excerpt(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(6)..];
    tail.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_from_named_values_reads_like_one_from_ncus_report() {
        let raw = RawLaunch::from_metrics(
            "matmul",
            &[
                ("dram__bytes_read.sum".into(), Some(1024.0)),
                ("lts__t_sector_hit_rate.pct".into(), None),
            ],
        );
        assert_eq!(raw.column("Kernel Name"), Some("matmul"));
        assert_eq!(raw.metric("dram__bytes_read.sum"), Some(1024.0));
        assert_eq!(raw.metric("lts__t_sector_hit_rate.pct"), None);
        let profile = crate::KernelProfile::from_raw(&raw);
        assert_eq!(profile.kernel, "matmul");
        assert_eq!(profile.memory.dram_read_bytes, Some(1024.0));
    }

    const SMALL: &str = "==PROF== Connected to process 4242 (/tmp/matmul)\n\
        result ok\n\
        \"ID\",\"Process ID\",\"Kernel Name\",\"Block Size\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\",\"lts__t_sector_hit_rate.pct\"\n\
        \"\",\"\",\"\",\"\",\"Kbyte\",\"usecond\",\"%\"\n\
        \"0\",\"4242\",\"matmul\",\"(16, 16, 1)\",\"1,048,576\",\"12.5\",\"n/a\"\n\
        ==PROF== Disconnected from process 4242\n";

    #[test]
    fn skips_what_precedes_the_header_and_reads_one_row_per_launch() {
        let launches = parse_raw_csv(SMALL).unwrap();
        assert_eq!(launches.len(), 1);
        let l = &launches[0];
        assert_eq!(l.column("Kernel Name"), Some("matmul"));
        assert_eq!(l.column("Block Size"), Some("(16, 16, 1)"));
    }

    #[test]
    fn numbers_lose_their_separators_and_take_base_units() {
        let l = &parse_raw_csv(SMALL).unwrap()[0];
        assert_eq!(l.metric("dram__bytes_read.sum"), Some(1_048_576_000.0));
        assert_eq!(l.metric("gpu__time_duration.sum"), Some(12_500.0));
    }

    #[test]
    fn not_available_and_missing_metrics_are_none() {
        let l = &parse_raw_csv(SMALL).unwrap()[0];
        assert_eq!(l.metric("lts__t_sector_hit_rate.pct"), None);
        assert_eq!(
            l.metric("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            None
        );
    }

    #[test]
    fn output_without_a_table_is_an_error_that_shows_its_end() {
        let err = parse_raw_csv("==PROF== Connected\n==WARNING== No kernels were profiled.\n")
            .unwrap_err();
        assert!(
            err.to_string().contains("No kernels were profiled"),
            "{err}"
        );
    }

    #[test]
    fn units_scale_by_si_prefixes_and_durations_become_nanoseconds() {
        assert_eq!(unit_factor("byte"), 1.0);
        assert_eq!(unit_factor("Kbyte"), 1e3);
        assert_eq!(unit_factor("Gbyte/second"), 1e9);
        assert_eq!(unit_factor("msecond"), 1e6);
        assert_eq!(unit_factor("byte/second"), 1.0);
        assert_eq!(unit_factor("%"), 1.0);
        assert_eq!(unit_factor("register/thread"), 1.0);
    }
}
