//! How a transform ended: its result, or where and why it stopped early (not an error: resumable).

use kt_graph::{RunOutcome, StopReason};

use super::result::RunResult;
use crate::stage3::Stage3State;
use kt_record::ResultFiles;

/// How a transform ended.
#[derive(Debug, Clone)]
pub struct TransformOutcome {
    pub result: RunResult,
    pub state: Option<Stage3State>,
    /// Set when the run stopped before its end without failing (a breakpoint, a node's interrupt, the step
    /// limit, Ctrl-C); `kt resume` continues it.
    pub stopped: Option<Stopped>,
    /// Where the result files went (the run's root, or `branches/b<N>/` for a side branch).
    pub results: ResultFiles,
}

/// Where and why a run stopped early. Not an error: the run is saved and resumable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The checkpoint `kt resume` continues from; None when Stages 1-2 were interrupted before Stage 3 began.
    pub checkpoint: Option<u64>,
    /// `before apply`, `after select`, `at an interrupt of plan`, `at the step limit`, `during stages 1-2`.
    pub at: String,
    /// Ctrl-C (the run's cancel token), as opposed to a stop the run was set up for.
    pub cancelled: bool,
    /// The manual provider's question the run waits for, when that is why it stopped.
    pub waiting: Option<kt_record::WaitingAnswer>,
}

impl Stopped {
    pub(super) fn of<S>(outcome: &RunOutcome<S>) -> Stopped {
        let at = match outcome {
            RunOutcome::Stopped { reason, .. } => match reason {
                StopReason::BeforeNode(node) => format!("before {node}"),
                StopReason::AfterNode(node) => format!("after {node}"),
                StopReason::Interrupt { node, .. } => format!("at an interrupt of {node}"),
            },
            RunOutcome::Paused { .. } | RunOutcome::Finished { .. } => "at the step limit".into(),
        };
        Stopped {
            checkpoint: Some(outcome.checkpoint().0),
            at,
            cancelled: false,
            waiting: crate::graph_run::waiting_of(outcome),
        }
    }

    /// `stopped before apply at checkpoint 12; `kt resume RUN` continues` (Ctrl-C: `interrupted ...`).
    pub fn message(&self, run: &std::path::Path) -> String {
        if let Some(w) = &self.waiting {
            return format!(
                "waiting for an answer to `{}` (prompt {}): the prompt is {}; continue with `kt resume {} --answer \
                 FILE --answer-for {}` (or write the answer to {} and run `kt resume {}`)",
                w.node,
                w.id(),
                w.prompt_file.display(),
                run.display(),
                w.id(),
                w.answer_file.display(),
                run.display()
            );
        }
        let verb = if self.cancelled {
            "interrupted"
        } else {
            "stopped"
        };
        let at = match self.checkpoint {
            Some(cp) => format!("{verb} {} at checkpoint {cp}", self.at),
            None => format!("{verb} {}", self.at),
        };
        format!("{at}; `kt resume {}` continues", run.display())
    }
}
