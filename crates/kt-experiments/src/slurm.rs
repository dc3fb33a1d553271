//! `kt experiment slurm`: the same cells as a SLURM job array.
//!
//! Writes into `<out>/slurm/`:
//! - `cells.txt`: one cell id per line; array task `i` runs the cell on line `i + 1` (tasks are 0-based);
//! - `cells.sbatch`: the array job (`--array=0-(N-1)`), each task running
//!   `kt experiment run-cell FILE --cell ID --out OUT`, which records, resumes or starts the cell exactly as
//!   `kt experiment run` would (so resubmitting the array after a failure redoes nothing that is done);
//! - `collect.sbatch`: the collection job, `kt experiment report OUT` into `OUT/report/`;
//! - `submit.sh`: submits the array, then the collection job with `--dependency=afterany:<array job>`.
//!
//! The task gets SIGTERM two minutes before its time limit (`--signal=B:TERM@120`) so the cell can stop at a
//! checkpoint and stay resumable; with `requeue`, a task SLURM preempts and requeues resumes its cell the
//! same way. What an admin asks of a job is there: GPUs as `--gres` or `--gpus-per-task`, array throttling
//! (`%N`), account, QoS, further `#SBATCH` lines, per-cell logs (`logs/<cell>.log`, appended across
//! requeues), a time limit derived from the design's time budget, and the `kt` binary and the `KT_*`
//! environment written into the script rather than left to the node's login environment. The `kt` path is
//! the one that wrote the scripts, overridable with `KT=...`.

use std::path::{Path, PathBuf};

use crate::cell::Cell;
use crate::error::ExperimentError;

/// How array tasks ask for their GPUs: the generic resource (`--gres=gpu:N`, every SLURM) or
/// `--gpus-per-task=N` (SLURM ≥ 19.05 with select/cons_tres; some sites allow only one of the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpuRequest {
    #[default]
    Gres,
    GpusPerTask,
}

impl std::str::FromStr for GpuRequest {
    type Err = ExperimentError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "gres" => Ok(GpuRequest::Gres),
            "gpus-per-task" => Ok(GpuRequest::GpusPerTask),
            other => Err(ExperimentError::Option {
                detail: format!("unknown GPU request `{other}`: use gres or gpus-per-task"),
            }),
        }
    }
}

/// Options of `kt experiment slurm`.
#[derive(Debug, Clone, Default)]
pub struct SlurmOptions {
    pub partition: String,
    /// Per array task, `HH:MM:SS` (or anything `--time` accepts). None: derived from the cells' time budget
    /// (see [`task_time`]).
    pub time: Option<String>,
    /// GPUs per array task; 0 asks for none (CPU-only partitions, replayed or scripted cells).
    pub gpus: u32,
    pub gpu_request: GpuRequest,
    /// CPUs per task.
    pub cpus_per_task: u32,
    /// The experiment directory (absolute paths are best: tasks run on other nodes).
    pub out: PathBuf,
    /// The kt binary the tasks run.
    pub kt: PathBuf,
    /// Let SLURM requeue preempted or failed-node tasks; a requeued task resumes its cell's run from the
    /// last checkpoint.
    pub requeue: bool,
    /// At most this many array tasks at once (`--array=0-N%M`).
    pub max_running: Option<u32>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// Further `#SBATCH` options, e.g. `--mem=64G` or `--constraint=h100`, for both jobs.
    pub extra: Vec<String>,
    /// Environment the tasks get explicitly (the `KT_*` variables of the shell that wrote the scripts).
    pub env: Vec<(String, String)>,
}

/// The files written.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmScripts {
    pub dir: PathBuf,
    pub cell_list: PathBuf,
    pub array: PathBuf,
    pub collect: PathBuf,
    pub submit: PathBuf,
    pub tasks: usize,
}

/// The default time limit of an array task: the largest per-cell time budget plus 10 % and 10 minutes (for
/// start-up and the checkpoint after SIGTERM), in whole minutes; 4 hours when no cell has a time budget.
pub fn task_time(cells: &[Cell]) -> String {
    let budget = cells.iter().filter_map(|c| c.budget.time).max();
    // Integer arithmetic: 1.1 × 14 400 s in floating point is a hair above 264 minutes.
    let minutes = budget.map_or(240, |b| b.as_secs().saturating_mul(11).div_ceil(600) + 10);
    let (days, hours, mins) = (minutes / 1440, minutes % 1440 / 60, minutes % 60);
    if days > 0 {
        format!("{days}-{hours:02}:{mins:02}:00")
    } else {
        format!("{hours:02}:{mins:02}:00")
    }
}

/// Writes the scripts for `cells` of the design at `design_file`.
pub fn write_slurm(
    design_name: &str,
    design_file: &Path,
    cells: &[Cell],
    opts: &SlurmOptions,
) -> Result<SlurmScripts, ExperimentError> {
    let time = opts.time.clone().unwrap_or_else(|| task_time(cells));
    check(cells, opts, &time)?;
    let dir = opts.out.join("slurm");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| ExperimentError::io(&logs, "creating the SLURM directory", e))?;
    let cell_list = dir.join("cells.txt");
    let list: String = cells.iter().map(|c| format!("{}\n", c.id)).collect();
    write(&cell_list, &list)?;
    let shared = Shared {
        design_name,
        n: cells.len(),
        design: quote(&design_file.to_string_lossy()),
        out: quote(&opts.out.to_string_lossy()),
        kt: quote(&opts.kt.to_string_lossy()),
        common: common_lines(opts),
        env: opts
            .env
            .iter()
            .map(|(k, v)| format!("export {k}={}\n", quote(v)))
            .collect(),
        logs_q: quote(&logs.to_string_lossy()),
    };
    let array = dir.join("cells.sbatch");
    write(&array, &array_script(&shared, opts, &time, &cell_list))?;
    let collect = dir.join("collect.sbatch");
    write(&collect, &collect_script(&shared, opts))?;
    let submit = dir.join("submit.sh");
    write(&submit, &submit_script(shared.n))?;
    for script in [&array, &collect, &submit] {
        make_executable(script)?;
    }
    Ok(SlurmScripts {
        dir,
        cell_list,
        array,
        collect,
        submit,
        tasks: shared.n,
    })
}

/// What the scripts share, quoted for the shell where it is a value.
struct Shared<'a> {
    design_name: &'a str,
    /// How many cells (array tasks).
    n: usize,
    design: String,
    out: String,
    kt: String,
    /// The `#SBATCH` lines every job takes (account, partition, ...).
    common: String,
    /// `export K=V` lines of the options' environment.
    env: String,
    logs_q: String,
}

/// The array job: one task per cell of cells.txt.
fn array_script(shared: &Shared, opts: &SlurmOptions, time: &str, cell_list: &Path) -> String {
    let Shared {
        design_name,
        n,
        design,
        out,
        kt,
        common,
        env,
        logs_q,
    } = shared;
    let gpus = match (opts.gpus, opts.gpu_request) {
        (0, _) => String::new(),
        (g, GpuRequest::Gres) => format!("#SBATCH --gres=gpu:{g}\n"),
        (g, GpuRequest::GpusPerTask) => {
            format!("#SBATCH --ntasks=1\n#SBATCH --gpus-per-task={g}\n")
        }
    };
    let throttle = opts
        .max_running
        .map_or_else(String::new, |m| format!("%{m}"));
    let requeue = if opts.requeue {
        "--requeue"
    } else {
        "--no-requeue"
    };
    format!(
        r#"#!/usr/bin/env bash
# One array task per cell of the experiment {design_name} ({n} cells), written by `kt experiment slurm`.
# Task i runs the cell on line i+1 of cells.txt. Resubmitting is safe: finished cells are skipped and
# half-finished ones resume from their last checkpoint (so does a task that SLURM requeues).
# Each cell's output is appended to logs/<cell>.log; the kt run's own log is cells/<cell>/attempt-N.log.
#SBATCH --job-name={name}
{common}#SBATCH --time={time}
{gpus}#SBATCH --cpus-per-task={cpus}
#SBATCH --array=0-{last}{throttle}
#SBATCH {requeue}
#SBATCH --signal=B:TERM@120
#SBATCH --open-mode=append
#SBATCH --output={logs_q}/task-%A_%a.out
set -euo pipefail

# What the tasks run, fixed when the scripts were written (override KT to use another binary). The rest of
# the submitting shell's environment (API keys such as OPENAI_API_KEY) reaches the tasks through sbatch's
# default --export=ALL.
KT="${{KT:-{kt}}}"
{env}CELL_LIST={cell_list}
LOGS={logs_q}

if [[ -z "${{SLURM_ARRAY_TASK_ID:-}}" ]]; then
  echo "SLURM_ARRAY_TASK_ID is not set: submit this script with sbatch (see submit.sh)" >&2
  exit 2
fi
line=$((SLURM_ARRAY_TASK_ID + 1))
cell=$(sed -n "${{line}}p" "$CELL_LIST")
if [[ -z "$cell" ]]; then
  echo "array task $SLURM_ARRAY_TASK_ID has no cell in $CELL_LIST ({n} cells)" >&2
  exit 2
fi
exec >>"$LOGS/$cell.log" 2>&1
echo "$(date -u +%FT%TZ) job ${{SLURM_ARRAY_JOB_ID:-?}}_$SLURM_ARRAY_TASK_ID (restart ${{SLURM_RESTART_COUNT:-0}}) on $(hostname): cell $cell, GPU ${{CUDA_VISIBLE_DEVICES:-none}}"
exec "$KT" experiment run-cell {design} --cell "$cell" --out {out}
"#,
        name = quote(&format!("kt-{design_name}")),
        time = quote(time),
        cpus = opts.cpus_per_task.max(1),
        last = n - 1,
        cell_list = quote(&cell_list.to_string_lossy()),
    )
}

/// The collection job: tables and plots once the array job has ended.
fn collect_script(shared: &Shared, opts: &SlurmOptions) -> String {
    format!(
        r#"#!/usr/bin/env bash
# Collects the results of the array job once it has ended: tables and plots into {report_dir}.
#SBATCH --job-name={collect_name}
{common}#SBATCH --time=00:30:00
#SBATCH --cpus-per-task=1
#SBATCH --output={logs_q}/collect-%j.out
set -euo pipefail

KT="${{KT:-{kt}}}"
{env}"$KT" experiment report {out} --format md
"$KT" experiment report {out} --format csv --no-plots > /dev/null
"#,
        report_dir = opts.out.join("report").display(),
        collect_name = quote(&format!("kt-{}-report", shared.design_name)),
        common = shared.common,
        logs_q = shared.logs_q,
        kt = shared.kt,
        env = shared.env,
        out = shared.out,
    )
}

/// submit.sh: the array job, then the collection job after it.
fn submit_script(n: usize) -> String {
    format!(
        r#"#!/usr/bin/env bash
# Submits the array job, then the collection job to run after it (whatever the cells' exit codes).
set -euo pipefail
here=$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)
array_job=$(sbatch --parsable "$here/cells.sbatch")
array_job=${{array_job%%;*}}
collect_job=$(sbatch --parsable --dependency="afterany:$array_job" "$here/collect.sbatch")
collect_job=${{collect_job%%;*}}
echo "submitted array job $array_job ({n} cells) and collection job $collect_job"
"#
    )
}

fn check(cells: &[Cell], opts: &SlurmOptions, time: &str) -> Result<(), ExperimentError> {
    let bad = |detail: String| Err(ExperimentError::Option { detail });
    if cells.is_empty() {
        return bad("the design has no cells".into());
    }
    if opts.partition.trim().is_empty() {
        return bad("--partition must name a SLURM partition".into());
    }
    if !valid_time(time) {
        return bad(format!(
            "--time `{time}` is not a SLURM time (HH:MM:SS, MM:SS, D-HH:MM:SS or minutes)"
        ));
    }
    if opts.max_running == Some(0) {
        return bad("--max-running must be at least 1".into());
    }
    if let Some(line) = opts
        .extra
        .iter()
        .find(|l| !l.starts_with("--") || l.contains('\n'))
    {
        return bad(format!(
            "--sbatch `{line}` is not one sbatch option (write it as --name=value, e.g. --mem=64G)"
        ));
    }
    if let Some((k, _)) = opts.env.iter().find(|(k, _)| !is_env_name(k)) {
        return bad(format!("`{k}` is not an environment variable name"));
    }
    if cells.len() > 1000 {
        // SLURM's default MaxArraySize is 1001 (indices 0..=1000); larger clusters raise it.
        tracing::warn!(
            cells = cells.len(),
            "more array tasks than SLURM's default MaxArraySize allows; check `scontrol show config`"
        );
    }
    Ok(())
}

/// The `#SBATCH` lines both jobs share: partition, account, QoS and the user's extra options.
fn common_lines(opts: &SlurmOptions) -> String {
    let mut lines = format!("#SBATCH --partition={}\n", quote(&opts.partition));
    for (flag, value) in [("account", &opts.account), ("qos", &opts.qos)] {
        if let Some(v) = value {
            lines.push_str(&format!("#SBATCH --{flag}={}\n", quote(v)));
        }
    }
    for extra in &opts.extra {
        lines.push_str(&format!("#SBATCH {extra}\n"));
    }
    lines
}

fn is_env_name(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Single-quotes a word for bash.
pub(crate) fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn valid_time(t: &str) -> bool {
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    days.is_none_or(digits)
        && !rest.is_empty()
        && rest.split(':').count() <= 3
        && rest.split(':').all(digits)
}

fn write(path: &Path, text: &str) -> Result<(), ExperimentError> {
    std::fs::write(path, text).map_err(|e| ExperimentError::io(path, "writing a SLURM file", e))
}

fn make_executable(path: &Path) -> Result<(), ExperimentError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| ExperimentError::io(path, "making a script executable", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_needed() {
        assert_eq!(quote("/a/b-c.toml"), "/a/b-c.toml");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn the_task_time_follows_the_largest_budget_with_room_for_the_checkpoint() {
        use crate::budget::Budget;
        use std::time::Duration;
        let cell = |secs: Option<u64>| Cell {
            budget: Budget {
                time: secs.map(Duration::from_secs),
                ..Budget::default()
            },
            ..Cell::for_test("c", "explicit", "m")
        };
        assert_eq!(task_time(&[cell(None)]), "04:00:00");
        // 4 h × 1.1 = 264 min, + 10
        assert_eq!(
            task_time(&[cell(Some(600)), cell(Some(4 * 3600))]),
            "04:34:00"
        );
        // 24 h × 1.1 = 1584 min + 10 = 1594 = 1 day 02:34
        assert_eq!(task_time(&[cell(Some(24 * 3600))]), "1-02:34:00");
    }

    #[test]
    fn extra_lines_and_environment_names_are_checked() {
        assert!(is_env_name("KT_LLM") && !is_env_name("1X") && !is_env_name("A-B"));
        assert_eq!(
            "gpus-per-task".parse::<GpuRequest>().unwrap(),
            GpuRequest::GpusPerTask
        );
        assert!("gpu".parse::<GpuRequest>().is_err());
    }

    #[test]
    fn slurm_times_are_checked() {
        for ok in ["04:00:00", "30:00", "90", "1-12:00:00"] {
            assert!(valid_time(ok), "{ok}");
        }
        for bad in ["", "4h", "1:2:3:4", "a-01:00"] {
            assert!(!valid_time(bad), "{bad}");
        }
    }
}
