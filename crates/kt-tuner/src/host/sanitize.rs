//! compute-sanitizer on one configuration (`--sanitize`): kt's own worker runs under each of racecheck,
//! memcheck, initcheck and synccheck while the candidate is verified against itself on one small test, so
//! every launch the tool sees is the candidate's (or kt's fill/poison/compare kernels). Each tool's log is
//! parsed into error counts and its first messages. Without the tool, one line says why nothing ran.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::TunerError;
use crate::model::args::TestSet;
use crate::model::space::Config;
use crate::session::{TunableKernel, Tuner, TunerConfig};
use crate::worker::process::WorkerCommand;

/// The compute-sanitizer tools kt runs, in this order.
pub const TOOLS: [&str; 4] = ["racecheck", "memcheck", "initcheck", "synccheck"];

/// How many messages of each tool the report keeps.
const KEPT_MESSAGES: usize = 5;

/// What one tool found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolFindings {
    pub tool: String,
    /// Errors the tool's summary counts (`ERROR SUMMARY: N errors`; racecheck: hazards that are errors).
    pub errors: u64,
    /// racecheck's warnings (hazards it is not sure of).
    pub warnings: u64,
    /// The first messages (`Error: Race reported between Write access at …`), one line each.
    pub messages: Vec<String>,
    /// The tool did not finish (no summary in its log): why, in words.
    #[serde(default)]
    pub incomplete: Option<String>,
}

impl ToolFindings {
    pub fn clean(&self) -> bool {
        self.errors == 0 && self.incomplete.is_none()
    }
}

/// The sanitizer's verdict on a configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SanitizerReport {
    Ran {
        tools: Vec<ToolFindings>,
    },
    /// compute-sanitizer is not on this machine: nothing was checked.
    Skipped {
        reason: String,
    },
}

impl SanitizerReport {
    /// Whether every tool ran and found no error (a skipped check is not a pass: it says nothing).
    pub fn clean(&self) -> bool {
        matches!(self, SanitizerReport::Ran { tools } if tools.iter().all(ToolFindings::clean))
    }

    /// One line per tool (or the one line of a skip).
    pub fn lines(&self) -> Vec<String> {
        match self {
            SanitizerReport::Skipped { reason } => {
                vec![format!("sanitizer checks skipped: {reason}")]
            }
            SanitizerReport::Ran { tools } => tools
                .iter()
                .flat_map(|t| {
                    let head = match &t.incomplete {
                        Some(why) => format!("{}: did not finish ({why})", t.tool),
                        None if t.clean() => format!("{}: no errors", t.tool),
                        None => format!(
                            "{}: {} error(s){}",
                            t.tool,
                            t.errors,
                            if t.warnings > 0 {
                                format!(", {} warning(s)", t.warnings)
                            } else {
                                String::new()
                            }
                        ),
                    };
                    std::iter::once(head).chain(t.messages.iter().map(|m| format!("  {m}")))
                })
                .collect(),
        }
    }
}

/// Runs every tool of [`TOOLS`] on `kernel` at `config`, on the first test of `tests` (give a small one):
/// the kernel is verified against itself under a worker wrapped by the tool, and the tool's log is read
/// once the worker has exited. Without compute-sanitizer: `Skipped` with the reason.
pub fn run_tools(
    setup: &TunerConfig,
    kernel: &TunableKernel,
    config: &Config,
    tests: &TestSet,
) -> Result<SanitizerReport, TunerError> {
    let sanitizer = match find_tool() {
        Ok(p) => p,
        Err(reason) => return Ok(SanitizerReport::Skipped { reason }),
    };
    let one = TestSet {
        tests: tests.tests.iter().take(1).cloned().collect(),
    };
    let base = match &setup.worker {
        Some(w) => w.clone(),
        None => WorkerCommand::current_exe()?,
    };
    let dir = std::env::temp_dir().join(format!("kt-sanitize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| TunerError::io(&dir, e))?;
    let mut tools = Vec::new();
    for tool in TOOLS {
        let log = dir.join(format!("{tool}.log"));
        let _ = std::fs::remove_file(&log);
        let wrapped = TunerConfig {
            worker: Some(wrap_worker(&sanitizer, tool, &log, &base)),
            // every launch is instrumented: far slower than usual
            timeout_floor: setup.timeout_floor.max(Duration::from_secs(300)),
            ..setup.clone()
        };
        let mut tuner = Tuner::new(wrapped)?;
        let ran = tuner.verify(kernel, config, kernel, config, &one);
        tuner.close(Duration::from_secs(120));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let mut findings = parse_log(tool, &text);
        match ran {
            Err(e) => findings.incomplete = Some(e.to_string()),
            Ok(r) if !r.passed() && findings.incomplete.is_none() && findings.errors == 0 => {
                let why: Vec<String> = r.tests.iter().map(|t| t.verdict.reason()).collect();
                findings.incomplete =
                    Some(format!("the run under the tool failed: {}", why.join("; ")));
            }
            Ok(_) => {}
        }
        tools.push(findings);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(SanitizerReport::Ran { tools })
}

/// compute-sanitizer on PATH, in `$CUDA_HOME/bin`, or in /usr/local/cuda/bin.
pub fn find_tool() -> Result<PathBuf, String> {
    let name = "compute-sanitizer";
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let cuda_home = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|h| PathBuf::from(h).join("bin"));
    let mut searched = Vec::new();
    for dir in path_dirs
        .into_iter()
        .chain(cuda_home)
        .chain([PathBuf::from("/usr/local/cuda/bin")])
    {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
        searched.push(dir.display().to_string());
    }
    Err(format!(
        "{name} was not found (searched PATH, $CUDA_HOME/bin and /usr/local/cuda/bin); it comes with the CUDA toolkit"
    ))
}

/// The worker command `base` run under `sanitizer`'s `tool`, its log written to `log`.
pub fn wrap_worker(
    sanitizer: &Path,
    tool: &str,
    log: &Path,
    base: &WorkerCommand,
) -> WorkerCommand {
    let mut args = vec![
        "--tool".to_string(),
        tool.to_string(),
        "--log-file".to_string(),
        log.display().to_string(),
        "--print-limit".to_string(),
        "20".to_string(),
    ];
    if tool == "racecheck" {
        args.extend(["--racecheck-report".into(), "all".into()]);
    }
    args.push(base.program.display().to_string());
    args.extend(base.args.iter().cloned());
    WorkerCommand {
        program: sanitizer.to_path_buf(),
        args,
        env: base.env.clone(),
        under_profiler: base.under_profiler,
    }
}

/// The findings in one tool's log. compute-sanitizer prefixes every line with `=========`; the summary
/// lines are `ERROR SUMMARY: N errors` and, for racecheck, `RACECHECK SUMMARY: N hazards displayed (E
/// errors, W warnings)`.
pub fn parse_log(tool: &str, text: &str) -> ToolFindings {
    let mut f = ToolFindings {
        tool: tool.to_string(),
        errors: 0,
        warnings: 0,
        messages: Vec::new(),
        incomplete: None,
    };
    let mut summary = false;
    let mut race_summary: Option<(u64, u64)> = None;
    for line in text.lines() {
        let body = line.trim_start_matches('=').trim();
        if let Some(rest) = body.strip_prefix("ERROR SUMMARY:") {
            summary = true;
            f.errors = f.errors.max(first_number(rest).unwrap_or(0));
        } else if let Some(rest) = body.strip_prefix("RACECHECK SUMMARY:") {
            summary = true;
            race_summary = Some((
                number_before(rest, "error").unwrap_or(0),
                number_before(rest, "warning").unwrap_or(0),
            ));
        } else if (body.starts_with("Error")
            || body.starts_with("Warning")
            || body.starts_with("Invalid"))
            && f.messages.len() < KEPT_MESSAGES
        {
            f.messages.push(body.to_string());
        }
    }
    if let Some((errors, warnings)) = race_summary {
        f.errors = f.errors.max(errors);
        f.warnings = warnings;
    }
    if !summary {
        f.incomplete = Some("no summary in its log: the worker did not exit normally".into());
    }
    f
}

fn first_number(text: &str) -> Option<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
}

/// The number just before the first word starting with `word` (`1 error` → 1).
fn number_before(text: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .find(|w| w[1].starts_with(word))
        .and_then(|w| w[0].parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RACECHECK: &str = "\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at tiled_matmul(const float *, const float *, float *, int)+0x2a0 in matmul.cu:31
=========     and Read access at tiled_matmul(const float *, const float *, float *, int)+0x310 in matmul.cu:36 [4096 hazards]
=========
========= Warning: Race reported between Write access at tiled_matmul+0x2a0 in matmul.cu:31
=========     and Read access at tiled_matmul+0x320 in matmul.cu:36 [12 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
";

    const MEMCHECK: &str = "\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at reduce_sum(const float *, float *, int)+0x1b0 in reduce_sum.cu:12
=========     by thread (255,0,0) in block (39,0,0)
=========     Address 0x7f3a4e009c3c is out of bounds
=========
========= Invalid __global__ read of size 4 bytes
=========     at reduce_sum(const float *, float *, int)+0x1b0 in reduce_sum.cu:12
=========
========= ERROR SUMMARY: 3 errors
";

    const CLEAN: &str = "\
========= COMPUTE-SANITIZER
========= ERROR SUMMARY: 0 errors
";

    #[test]
    fn racecheck_summary_counts_errors_and_warnings() {
        let f = parse_log("racecheck", RACECHECK);
        assert_eq!((f.errors, f.warnings), (1, 1));
        assert_eq!(f.messages.len(), 2);
        assert!(f.messages[0].starts_with("Error: Race reported between Write access"));
        assert!(!f.clean());
    }

    #[test]
    fn memcheck_errors_and_their_first_messages_are_kept() {
        let f = parse_log("memcheck", MEMCHECK);
        assert_eq!(f.errors, 3);
        assert_eq!(f.messages[0], "Invalid __global__ read of size 4 bytes");
        let report = SanitizerReport::Ran {
            tools: vec![f, parse_log("synccheck", CLEAN)],
        };
        assert!(!report.clean());
        let lines = report.lines();
        assert_eq!(lines[0], "memcheck: 3 error(s)");
        assert!(
            lines.contains(&"synccheck: no errors".to_string()),
            "{lines:?}"
        );
    }

    #[test]
    fn a_log_without_a_summary_is_incomplete_not_clean() {
        let f = parse_log("initcheck", "========= COMPUTE-SANITIZER\n");
        assert!(f.incomplete.is_some() && !f.clean());
        assert!(parse_log("initcheck", CLEAN).clean());
    }

    #[test]
    fn a_skip_is_one_line_and_never_clean() {
        let r = SanitizerReport::Skipped {
            reason: "compute-sanitizer was not found".into(),
        };
        assert!(!r.clean());
        assert_eq!(
            r.lines(),
            vec!["sanitizer checks skipped: compute-sanitizer was not found"]
        );
    }

    #[test]
    fn the_worker_runs_under_the_tool_with_its_own_arguments() {
        let base = WorkerCommand {
            program: PathBuf::from("/usr/bin/kt"),
            args: vec!["__tuner-worker".into()],
            env: vec![("A".into(), "1".into())],
            under_profiler: false,
        };
        let w = wrap_worker(
            Path::new("/cuda/bin/compute-sanitizer"),
            "memcheck",
            Path::new("/tmp/m.log"),
            &base,
        );
        assert_eq!(w.program, PathBuf::from("/cuda/bin/compute-sanitizer"));
        assert_eq!(
            w.args,
            [
                "--tool",
                "memcheck",
                "--log-file",
                "/tmp/m.log",
                "--print-limit",
                "20",
                "/usr/bin/kt",
                "__tuner-worker"
            ]
        );
        assert_eq!(w.env, base.env);
    }
}
