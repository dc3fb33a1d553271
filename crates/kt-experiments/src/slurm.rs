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
//! checkpoint and stay resumable. The `kt` path is the one that wrote the scripts, overridable with `KT=...`.

use std::path::{Path, PathBuf};

use crate::cell::Cell;
use crate::error::ExperimentError;

/// Options of `kt experiment slurm`.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    pub partition: String,
    /// Per array task, `HH:MM:SS` (or anything `--time` accepts).
    pub time: String,
    pub gpus_per_job: u32,
    /// CPUs per task.
    pub cpus_per_task: u32,
    /// The experiment directory (absolute paths are best: tasks run on other nodes).
    pub out: PathBuf,
    /// The kt binary the tasks run.
    pub kt: PathBuf,
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

/// Writes the scripts for `cells` of the design at `design_file`.
pub fn write_slurm(
    design_name: &str,
    design_file: &Path,
    cells: &[Cell],
    opts: &SlurmOptions,
) -> Result<SlurmScripts, ExperimentError> {
    if cells.is_empty() {
        return Err(ExperimentError::Option {
            detail: "the design has no cells".into(),
        });
    }
    if opts.partition.trim().is_empty() {
        return Err(ExperimentError::Option {
            detail: "--partition must name a SLURM partition".into(),
        });
    }
    if !valid_time(&opts.time) {
        return Err(ExperimentError::Option {
            detail: format!(
                "--time `{}` is not a SLURM time (HH:MM:SS, MM:SS, D-HH:MM:SS or minutes)",
                opts.time
            ),
        });
    }
    if cells.len() > 1000 {
        // SLURM's default MaxArraySize is 1001 (indices 0..=1000); larger clusters raise it.
        tracing::warn!(
            cells = cells.len(),
            "more array tasks than SLURM's default MaxArraySize allows; check `scontrol show config`"
        );
    }
    let dir = opts.out.join("slurm");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| ExperimentError::io(&logs, "creating the SLURM directory", e))?;

    let cell_list = dir.join("cells.txt");
    let list: String = cells.iter().map(|c| format!("{}\n", c.id)).collect();
    write(&cell_list, &list)?;

    let design = quote(&design_file.to_string_lossy());
    let out = quote(&opts.out.to_string_lossy());
    let kt = quote(&opts.kt.to_string_lossy());
    let name = quote(&format!("kt-{design_name}"));
    let partition = quote(&opts.partition);
    let n = cells.len();

    let array = dir.join("cells.sbatch");
    write(
        &array,
        &format!(
            r#"#!/usr/bin/env bash
# One array task per cell of the experiment {design_name} ({n} cells), written by `kt experiment slurm`.
# Task i runs the cell on line i+1 of cells.txt. Resubmitting is safe: finished cells are skipped and
# half-finished ones resume.
#SBATCH --job-name={name}
#SBATCH --partition={partition}
#SBATCH --time={time}
#SBATCH --gres=gpu:{gpus}
#SBATCH --cpus-per-task={cpus}
#SBATCH --array=0-{last}
#SBATCH --signal=B:TERM@120
#SBATCH --output={logs}/cell-%A_%a.out
set -euo pipefail

KT="${{KT:-{kt}}}"
CELL_LIST={cell_list}

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
echo "task $SLURM_ARRAY_TASK_ID: cell $cell on GPU ${{CUDA_VISIBLE_DEVICES:-none}}" >&2
exec "$KT" experiment run-cell {design} --cell "$cell" --out {out}
"#,
            time = quote(&opts.time),
            gpus = opts.gpus_per_job,
            cpus = opts.cpus_per_task.max(1),
            last = n - 1,
            logs = quote(&logs.to_string_lossy()),
            cell_list = quote(&cell_list.to_string_lossy()),
        ),
    )?;

    let collect = dir.join("collect.sbatch");
    write(
        &collect,
        &format!(
            r#"#!/usr/bin/env bash
# Collects the results of the array job once it has ended: tables and plots into {report_dir}.
#SBATCH --job-name={collect_name}
#SBATCH --partition={partition}
#SBATCH --time=00:30:00
#SBATCH --cpus-per-task=1
#SBATCH --output={logs}/collect-%j.out
set -euo pipefail

KT="${{KT:-{kt}}}"
"$KT" experiment report {out} --format md
"$KT" experiment report {out} --format csv --no-plots > /dev/null
"#,
            report_dir = opts.out.join("report").display(),
            collect_name = quote(&format!("kt-{design_name}-report")),
            logs = quote(&logs.to_string_lossy()),
        ),
    )?;

    let submit = dir.join("submit.sh");
    write(
        &submit,
        &format!(
            r#"#!/usr/bin/env bash
# Submits the array job, then the collection job to run after it (whatever the cells' exit codes).
set -euo pipefail
here=$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)
array_job=$(sbatch --parsable "$here/cells.sbatch")
array_job=${{array_job%%;*}}
collect_job=$(sbatch --parsable --dependency="afterany:$array_job" "$here/collect.sbatch")
echo "submitted array job $array_job ({n} cells) and collection job $collect_job"
"#
        ),
    )?;
    for script in [&array, &collect, &submit] {
        make_executable(script)?;
    }
    Ok(SlurmScripts {
        dir,
        cell_list,
        array,
        collect,
        submit,
        tasks: n,
    })
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
    fn slurm_times_are_checked() {
        for ok in ["04:00:00", "30:00", "90", "1-12:00:00"] {
            assert!(valid_time(ok), "{ok}");
        }
        for bad in ["", "4h", "1:2:3:4", "a-01:00"] {
            assert!(!valid_time(bad), "{bad}");
        }
    }
}
