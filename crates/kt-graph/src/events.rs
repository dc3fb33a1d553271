//! Typed events of a run, delivered to every subscriber without loss.
//!
//! Unbounded channels rather than a broadcast ring: a broadcast receiver that falls behind silently loses
//! events, and failures must always arrive. Events are small and a run emits a handful per step.

use crate::checkpoint::StopReason;
use crate::ids::{BranchId, CheckpointId, RunId};
use serde::Serialize;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub run: RunId,
    pub branch: BranchId,
    /// The superstep being executed (checkpoint step + 1), or the checkpoint's step for run-level events.
    pub step: u64,
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum EventKind {
    RunStarted {
        from: CheckpointId,
    },
    StepStarted {
        tasks: Vec<String>,
    },
    NodeStarted {
        node: String,
        index: u32,
        attempt: u32,
    },
    NodeFinished {
        node: String,
        index: u32,
        micros: u64,
        fields: Vec<&'static str>,
    },
    NodeFailed {
        node: String,
        index: u32,
        attempt: u32,
        error: String,
        will_retry: bool,
    },
    NodeRetrying {
        node: String,
        index: u32,
        next_attempt: u32,
        delay_ms: u64,
    },
    /// A node's retries were exhausted and its `on_exhausted` route was taken.
    NodeRouted {
        node: String,
        index: u32,
        to: String,
    },
    StateMerged {
        fields: Vec<&'static str>,
    },
    CheckpointSaved {
        checkpoint: CheckpointId,
    },
    Stopped {
        checkpoint: CheckpointId,
        reason: StopReason,
    },
    RunFinished {
        checkpoint: CheckpointId,
    },
    RunFailed {
        error: String,
    },
    /// Emitted by a node through [`NodeContext::emit`](crate::NodeContext::emit).
    Custom {
        node: String,
        name: String,
        payload: Value,
    },
}

/// Fans events out to the current subscribers.
#[derive(Clone, Default)]
pub(crate) struct EventSink {
    subscribers: Arc<Mutex<Vec<UnboundedSender<Event>>>>,
}

impl EventSink {
    pub(crate) fn subscribe(&self) -> UnboundedReceiver<Event> {
        let (tx, rx) = unbounded_channel();
        self.lock().push(tx);
        rx
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<UnboundedSender<Event>>> {
        self.subscribers.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn emit(&self, make: impl FnOnce() -> Event) {
        let mut subs = self.lock();
        if subs.is_empty() {
            return;
        }
        let event = make();
        subs.retain(|tx| tx.send(event.clone()).is_ok());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subscriber_gets_every_event_and_closed_ones_are_dropped() {
        let sink = EventSink::default();
        let mut a = sink.subscribe();
        let b = sink.subscribe();
        drop(b);
        let ev = || Event {
            run: RunId::new("r"),
            branch: BranchId(0),
            step: 1,
            kind: EventKind::RunFailed {
                error: "boom".into(),
            },
        };
        sink.emit(ev);
        sink.emit(ev);
        assert_eq!(a.try_recv().unwrap(), ev());
        assert_eq!(a.try_recv().unwrap(), ev());
        assert_eq!(sink.lock().len(), 1);
    }
}
