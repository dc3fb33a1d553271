//! Answers from the `llm.jsonl` of an earlier run, keyed by the request's stable hash. Identical requests are
//! answered in the order they were recorded. A request that was never recorded is a typed error, never a guess.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::error::LlmError;
use crate::provider::{Call, Provider};
use crate::recorder::{Record, read_records};
use crate::response::ProviderReply;

#[derive(Debug)]
pub struct ReplayProvider {
    cassette: PathBuf,
    model: String,
    queues: Mutex<HashMap<String, VecDeque<Record>>>,
    /// Hashes recorded per node, to tell the user what the node asked before.
    by_node: BTreeMap<String, Vec<String>>,
}

impl ReplayProvider {
    pub fn open(cassette: impl AsRef<Path>) -> Result<Self, LlmError> {
        let cassette = cassette.as_ref().to_path_buf();
        let records = read_records(&cassette)?;
        let mut queues: HashMap<String, VecDeque<Record>> = HashMap::new();
        let mut by_node: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut model = String::new();
        // Failed calls have no answer to give back.
        for r in records
            .into_iter()
            .filter(|r| r.error.is_none() && r.answer.is_some())
        {
            by_node
                .entry(r.node.clone())
                .or_default()
                .push(r.request_hash.clone());
            if model.is_empty() {
                model = r.model.clone();
            }
            queues
                .entry(r.request_hash.clone())
                .or_default()
                .push_back(r);
        }
        Ok(Self {
            cassette,
            model,
            queues: Mutex::new(queues),
            by_node,
        })
    }
}

#[async_trait]
impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        "replay"
    }
    fn model(&self) -> &str {
        &self.model
    }

    fn billed(&self) -> bool {
        false
    }

    async fn send(&self, call: Call<'_>) -> Result<ProviderReply, LlmError> {
        let node = &call.request.node;
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        let miss = |hint: String| LlmError::ReplayMiss {
            node: node.clone(),
            hash: call.hash.to_string(),
            cassette: self.cassette.clone(),
            hint,
        };
        let Some(queue) = queues.get_mut(call.hash) else {
            let hint = match self.by_node.get(node) {
                Some(hashes) => format!(
                    "this node recorded {} other request(s) ({}): its prompt, model, parameters or schema changed \
                     since the recording; record a new run",
                    hashes.len(),
                    hashes
                        .iter()
                        .take(3)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => {
                    "the recorded run never called this node: record a new run with a real provider"
                        .into()
                }
            };
            return Err(miss(hint));
        };
        let Some(record) = queue.pop_front() else {
            return Err(miss(
                "this request was recorded, but it is now asked more often than in the recording"
                    .into(),
            ));
        };
        Ok(ProviderReply {
            text: record.answer.unwrap_or_default(),
            thought: record.thought,
            usage: record.usage,
            model: Some(record.model),
            finish_reason: record.finish_reason,
        })
    }
}
