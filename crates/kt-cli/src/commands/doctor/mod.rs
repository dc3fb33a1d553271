//! `kt doctor`: checks everything kt needs on this machine and says how to fix what is missing.
//!
//! Each probe returns one or more [`Check`] lines; the command prints them as a table (or JSON) and exits 0 only
//! when every line is ok. Probes never panic: a missing CUDA library or python3 is a line, not a crash.

mod cuda;
mod llm;
mod profiler;
mod python;
mod sandbox;
mod storage;

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the checks as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Missing,
}

/// One line of the doctor's report.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Short name of what was checked, e.g. `cuda driver`.
    pub name: &'static str,
    pub status: Status,
    /// What was found (version, device name, path) or what is wrong.
    pub detail: String,
    /// How to fix it; absent when the check is ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(name: &'static str, detail: impl Into<String>) -> Self {
        Self {
            name,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }
    pub fn missing(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name,
            status: Status::Missing,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

#[derive(Debug, Serialize)]
struct Report {
    ok: bool,
    checks: Vec<Check>,
}

/// Runs every probe, in the order a user would fix things.
pub fn collect() -> Vec<Check> {
    let mut checks = cuda::probe();
    checks.push(profiler::probe());
    checks.extend(python::probe());
    checks.extend(sandbox::probe());
    checks.push(llm::probe());
    checks.push(storage::probe());
    checks
}

pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let checks = collect();
    let ok = checks.iter().all(|c| c.status == Status::Ok);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&Report { ok, checks })?);
    } else {
        print!("{}", render_table(&checks));
        println!(
            "{}",
            if ok {
                "all checks ok"
            } else {
                "some checks failed: see the fixes above"
            }
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn render_table(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in checks {
        let status = match c.status {
            Status::Ok => "ok",
            Status::Missing => "MISSING",
        };
        out.push_str(&format!(
            "{:<width$}  {:<7}  {}\n",
            c.name, status, c.detail
        ));
        if let Some(fix) = &c.fix {
            out.push_str(&format!("{:<width$}  {:<7}  fix: {}\n", "", "", fix));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shows_the_fix_under_a_missing_line() {
        let table = render_table(&[
            Check::ok("python3", "Python 3.12"),
            Check::missing("numpy", "not importable", "pip install numpy"),
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("python3") && lines[0].contains("ok"));
        assert!(lines[1].contains("MISSING") && lines[1].contains("not importable"));
        assert!(lines[2].contains("fix: pip install numpy"));
    }

    #[test]
    fn every_probe_reports_at_least_one_line_and_never_panics() {
        let checks = collect();
        for name in [
            "cuda driver",
            "nvrtc",
            "python3",
            "numpy",
            "sandbox: network namespace",
            "sandbox: private /tmp",
            "sandbox: PID and IPC namespaces",
            "sandbox: private home",
            "sandbox: system-call filter",
            "sandbox: uid switch",
            "sandbox: process limit",
            "sandbox: run memory",
            "sandbox: rlimits",
            "sandbox: disk quota",
            "llm endpoint",
            "run storage",
        ] {
            assert!(
                checks.iter().any(|c| c.name == name),
                "no line for {name}: {checks:?}"
            );
        }
        for c in &checks {
            assert_eq!(c.fix.is_some(), c.status == Status::Missing, "{c:?}");
        }
    }
}
