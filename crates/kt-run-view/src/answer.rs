//! Answering the prompt a `manual:` run waits for: `kt resume RUN --answer FILE [--answer-for ID]` and kt
//! studio's answer box both put the answer where the paused run's manual provider looks for it, then continue
//! the run.
//!
//! Each waiting prompt has an id: its prompt file's name without `.prompt.md` (`002-stage1.dimensions`), unique
//! in its prompt directory (the manual provider numbers them) and the same for the same question asked again.
//! An answer is given for one id, and refused when the run no longer waits for that id, when the prompt already
//! has an answer that a resume has not consumed yet, or (no id given) when the same text already answered
//! another prompt — so an answer typed for one question never becomes the answer to the next.

use std::path::Path;

use kt_record::RunDir;
use kt_record::RunResult;
use serde::Serialize;

use crate::error::RunsError;

pub use kt_record::WaitingAnswer;

/// The manual provider's first line of every prompt file (followed by the request hash).
pub const PROMPT_MARK: &str = "<!-- kt request ";

/// The prompt the run waits for an answer to (result.json's `waiting_for`), or None when it waits for none.
pub fn waiting_prompt(dir: &RunDir) -> Result<Option<WaitingAnswer>, RunsError> {
    Ok(RunResult::read(&dir.result_json())?.and_then(|r| r.waiting_for))
}

/// A waiting prompt's id: its prompt file's name without `.prompt.md`.
pub fn prompt_id(waiting: &WaitingAnswer) -> String {
    waiting.id()
}

/// A waiting prompt as a page shows it: its id, node, files, the question's text and whether it is answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitingPrompt {
    pub id: String,
    pub node: String,
    pub prompt_file: std::path::PathBuf,
    /// The prompt as the manual provider wrote it; None when the file is gone or is not a prompt kt wrote
    /// (a record pointing elsewhere is never read out).
    pub text: Option<String>,
    /// An answer is written and waits for `kt resume` to take it.
    pub answered: bool,
}

impl WaitingPrompt {
    pub fn read(waiting: &WaitingAnswer) -> Self {
        WaitingPrompt {
            id: prompt_id(waiting),
            node: waiting.node.clone(),
            prompt_file: waiting.prompt_file.clone(),
            text: prompt_text(&waiting.prompt_file),
            answered: has_answer(&waiting.answer_file),
        }
    }
}

/// The prompt file's text without its hash line, when it is a prompt the manual provider wrote.
fn prompt_text(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let (first, rest) = text.split_once('\n')?;
    first
        .starts_with(PROMPT_MARK)
        .then(|| rest.trim_start().to_string())
}

/// A link is never read through (nor written through: `write_no_follow`).
fn has_answer(path: &Path) -> bool {
    let link = path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    !link && std::fs::read_to_string(path).is_ok_and(|t| !t.trim().is_empty())
}

/// Writes `answer` to the waiting prompt's answer file; the run continues with `kt resume`. `for_id` is the
/// prompt the answer was written for (the studio always sends it; `kt resume --answer-for ID`). Refused when
/// the run waits for no answer, for another prompt than `for_id`, for a prompt already answered, or (without
/// `for_id`) when `answer` is word for word the answer to another prompt of the same directory.
pub fn answer_waiting_prompt(
    dir: &RunDir,
    answer: &str,
    for_id: Option<&str>,
) -> Result<WaitingAnswer, RunsError> {
    let Some(waiting) = waiting_prompt(dir)? else {
        return Err(RunsError::StaleAnswer(format!(
            "run {} is not waiting for an answer (its result.json has no `waiting_for`); resume it without an answer",
            dir.root().display()
        )));
    };
    // result.json is data: where it says to write is checked before anything there is read
    check_answer_path(dir, &waiting.answer_file)?;
    let id = prompt_id(&waiting);
    let run = dir.root().display();
    if let Some(wanted) = for_id
        && wanted != id
    {
        return Err(RunsError::StaleAnswer(format!(
            "the answer is for prompt `{wanted}`, but run {run} now waits for `{id}` (node {}): read {} and \
             answer that one (`kt resume {run} --answer FILE --answer-for {id}`)",
            waiting.node,
            waiting.prompt_file.display()
        )));
    }
    if has_answer(&waiting.answer_file) {
        return Err(RunsError::StaleAnswer(format!(
            "prompt `{id}` already has an answer in {}; `kt resume {run}` continues with it (delete that file \
             to answer again)",
            waiting.answer_file.display()
        )));
    }
    if answer.trim().is_empty() {
        return Err(RunsError::Usage(format!(
            "the answer to prompt `{id}` is empty; write the answer the prompt {} asks for",
            waiting.prompt_file.display()
        )));
    }
    if for_id.is_none()
        && let Some(other) = answered_elsewhere(&waiting, answer)
    {
        return Err(RunsError::StaleAnswer(format!(
            "this answer is word for word the answer already given to prompt `{other}`, but run {run} now \
             waits for `{id}` (node {}); if it is meant for `{id}` too, pass --answer-for {id}",
            waiting.node
        )));
    }
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

/// The id of another prompt in the waiting prompt's directory whose answer is `answer`.
fn answered_elsewhere(waiting: &WaitingAnswer, answer: &str) -> Option<String> {
    let dir = waiting.answer_file.parent()?;
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let path = entry.path();
        let name = path.file_name()?.to_string_lossy().to_string();
        let id = name.strip_suffix(".answer.md")?;
        (path != waiting.answer_file
            && std::fs::read_to_string(&path).is_ok_and(|t| t.trim() == answer.trim()))
        .then(|| id.to_string())
    })
}

// Answering is tested on a recorded run in kt-runs (`answer_tests.rs`), which has the pipeline's fixture; what
// needs no run is tested here.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_prompt_kt_wrote_is_read_out_and_its_id_is_its_file_name() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = dir.path().join("002-stage1.dimensions.prompt.md");
        std::fs::write(
            &prompt,
            format!("{PROMPT_MARK}ab -->\n\nHow many dimensions?"),
        )
        .unwrap();
        let planted = dir.path().join("notes.md");
        std::fs::write(&planted, "secret\nstuff").unwrap();
        assert_eq!(
            prompt_text(&prompt).as_deref(),
            Some("How many dimensions?")
        );
        assert_eq!(prompt_text(&planted), None);
        let waiting = WaitingAnswer {
            node: "stage1.dimensions".into(),
            prompt_file: prompt,
            answer_file: dir.path().join("002-stage1.dimensions.answer.md"),
        };
        assert_eq!(prompt_id(&waiting), "002-stage1.dimensions");
    }
}
