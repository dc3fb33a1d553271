//! Answering the prompt a `manual:` run waits for: `kt resume RUN --answer FILE` and kt studio's answer box
//! both put the answer where the paused run's manual provider looks for it, then continue the run.

use kt_pipeline::RunDir;
use kt_record::RunResult;

use crate::error::RunsError;

pub use kt_record::WaitingAnswer;

/// The prompt the run waits for an answer to (result.json's `waiting_for`), or None when it waits for none.
pub fn waiting_prompt(dir: &RunDir) -> Result<Option<WaitingAnswer>, RunsError> {
    let path = dir.result_json();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RunsError::io("reading", &path, e)),
    };
    let result: RunResult = serde_json::from_str(&text).map_err(|e| RunsError::BadJson {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    Ok(result.waiting_for)
}

/// Writes `answer` to the waiting prompt's answer file; the run continues with `kt resume`. Refused when the
/// run waits for no answer (its answer would be read by nothing), and when result.json names an answer file
/// that is not a manual provider's (`*.answer.md`) in the run directory or in the `manual:` directory the run
/// recorded, or that is a symbolic link: result.json is data, and must not choose what kt overwrites.
pub fn answer_waiting_prompt(dir: &RunDir, answer: &str) -> Result<WaitingAnswer, RunsError> {
    let Some(waiting) = waiting_prompt(dir)? else {
        return Err(RunsError::Usage(format!(
            "run {} is not waiting for an answer (its result.json has no `waiting_for`); resume it without an answer",
            dir.root().display()
        )));
    };
    check_answer_path(dir, &waiting.answer_file)?;
    write_no_follow(&waiting.answer_file, answer.as_bytes())
        .map_err(|e| RunsError::io("writing the answer to", &waiting.answer_file, e))?;
    Ok(waiting)
}

/// Refuses an answer path outside the places a manual provider of this run writes to.
fn check_answer_path(dir: &RunDir, path: &std::path::Path) -> Result<(), RunsError> {
    let refuse = |why: &str| {
        RunsError::Usage(format!(
            "refusing to write the answer to {}: {why}; result.json of {} names it, and a run directory is data \
             (write the answer file yourself if you trust it)",
            path.display(),
            dir.root().display()
        ))
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.ends_with(".answer.md") {
        return Err(refuse(
            "it is not a manual provider's answer file (NNN-node.answer.md)",
        ));
    }
    let parent = path
        .parent()
        .and_then(|p| p.canonicalize().ok())
        .ok_or_else(|| refuse("its directory does not exist"))?;
    let run_root = dir
        .root()
        .canonicalize()
        .map_err(|e| RunsError::io("reading", dir.root(), e))?;
    let manual_dir = dir
        .read_meta()
        .ok()
        .and_then(|m| m.llm.spec)
        .and_then(|s| s.strip_prefix("manual:").map(std::path::PathBuf::from))
        .and_then(|d| d.canonicalize().ok());
    if !parent.starts_with(&run_root) && Some(&parent) != manual_dir.as_ref() {
        return Err(refuse(
            "it lies outside the run directory and the run's manual: directory",
        ));
    }
    Ok(())
}

/// Writes `bytes` to `path`, refusing to follow a symbolic link there (O_NOFOLLOW).
fn write_no_follow(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kt_pipeline::job::recorded_run::record_matmul_run;

    #[tokio::test]
    async fn a_finished_run_waits_for_no_answer_and_refuses_one() {
        let home = tempfile::tempdir().unwrap();
        let run = record_matmul_run(home.path()).await;
        assert_eq!(waiting_prompt(&run).unwrap(), None);
        let err = answer_waiting_prompt(&run, "{}").unwrap_err().to_string();
        assert!(err.contains("not waiting for an answer"), "{err}");
    }

    #[tokio::test]
    async fn an_answer_goes_to_the_file_the_manual_provider_reads() {
        let home = tempfile::tempdir().unwrap();
        let run = record_matmul_run(home.path()).await;
        let text = std::fs::read_to_string(run.result_json()).unwrap();
        let mut result: serde_json::Value = serde_json::from_str(&text).unwrap();
        let answer_file = run.root().join("manual/001-stage3_apply.answer.md");
        std::fs::create_dir(run.root().join("manual")).unwrap();
        result["waiting_for"] = serde_json::json!({
            "node": "stage3.apply",
            "prompt_file": home.path().join("prompt.md"),
            "answer_file": answer_file,
        });
        std::fs::write(run.result_json(), result.to_string()).unwrap();
        let waiting = answer_waiting_prompt(&run, "the answer").unwrap();
        assert_eq!(waiting.node, "stage3.apply");
        assert_eq!(std::fs::read_to_string(&answer_file).unwrap(), "the answer");

        // a planted result.json: a path outside the run, a file that is no answer, a symbolic link
        let victim = home.path().join("victim.answer.md");
        std::fs::write(&victim, "mine").unwrap();
        let bashrc = run.root().join("manual/.bashrc");
        let link = run.root().join("manual/002-x.answer.md");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for (target, why) in [
            (&victim, "outside the run directory"),
            (&bashrc, "not a manual provider's answer file"),
            (&link, "writing the answer"),
        ] {
            result["waiting_for"]["answer_file"] = serde_json::json!(target);
            std::fs::write(run.result_json(), result.to_string()).unwrap();
            let err = answer_waiting_prompt(&run, "pwned")
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        assert!(!bashrc.exists());
    }
}
