//! The run's LLM record: every call appended as one JSON line to `llm.jsonl`. The replay provider reads the
//! same file as its cassette. What is written is the conversation, parameters, answer, thought, tokens, time,
//! node, provider and model: never headers, so never an API key.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::error::LlmError;
use crate::request::{Message, OutputSchema, Params};
use crate::usage::Usage;

/// One line of `llm.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// UTC, RFC 3339.
    pub time: String,
    pub node: String,
    pub provider: String,
    pub model: String,
    /// [`crate::LlmRequest::stable_hash`] of the request: the replay key.
    pub request_hash: String,
    pub messages: Vec<Message>,
    /// The parameters actually sent (client defaults filled in).
    pub params: Params,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<OutputSchema>,
    /// The answer with thinking removed; absent when the call failed.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub thought: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    pub elapsed_ms: u64,
    pub attempts: u32,
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// The error, when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What lenient intake repaired to read the answer (trailing commas, `"16"` read as 16, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// What the client did about this call: a switch to instruction mode, a re-ask after a cut-off answer, an
    /// answer that could not be used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Appends [`Record`]s to a JSONL file. Cheap to clone; clones share the file.
#[derive(Debug, Clone)]
pub struct Recorder {
    path: PathBuf,
    file: Arc<Mutex<File>>,
}

impl Recorder {
    /// Opens (creating if needed) `path` for appending, so a resumed run adds to its earlier record.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LlmError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| LlmError::io(dir, "creating the record's directory", e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            // a link planted in the run after it was checked is not followed (ELOOP): the record holds
            // prompts and answers, readable by the user only
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .mode(0o600)
            .open(&path)
            .map_err(|e| LlmError::io(&path, "opening the LLM record", e))?;
        Ok(Self {
            path,
            file: Arc::new(Mutex::new(file)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as one line and flushes, so a crash loses at most the call in flight.
    pub fn append(&self, record: &Record) -> Result<(), LlmError> {
        let mut line = serde_json::to_string(record).map_err(|e| LlmError::Config {
            detail: format!("cannot serialise an LLM record: {e}"),
            fix: "report this as a bug".into(),
        })?;
        line.push('\n');
        // A poisoned lock only means another writer panicked mid-call; the file itself is still usable.
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| LlmError::io(&self.path, "appending to the LLM record", e))
    }
}

/// Reads every record of a `llm.jsonl` file.
pub fn read_records(path: &Path) -> Result<Vec<Record>, LlmError> {
    let file = File::open(path).map_err(|e| LlmError::io(path, "opening the LLM cassette", e))?;
    let mut records = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| LlmError::io(path, "reading the LLM cassette", e))?;
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(&line).map_err(|e| LlmError::Config {
            detail: format!("{} line {}: not an LLM record ({e})", path.display(), i + 1),
            fix: "pass the `llm.jsonl` of a kt run".into(),
        })?;
        records.push(record);
    }
    Ok(records)
}

pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_planted_where_the_record_goes_is_not_followed_and_a_new_record_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let planted = dir.path().join("llm.jsonl");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let err = Recorder::open(&planted).unwrap_err().to_string();
        assert!(err.contains("llm.jsonl"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        let fresh = dir.path().join("run/llm.jsonl");
        Recorder::open(&fresh).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
