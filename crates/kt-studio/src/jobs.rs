//! Long operations started from the page (a replay, a resume): each runs in the background and is listed
//! with how it ended, so the page can say so; their effects show up in the run's own store like any run's.

use std::sync::{Arc, Mutex};

use serde::Serialize;

/// One background operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub id: usize,
    pub run: String,
    /// `replay`, `resume`, `answer`.
    pub kind: String,
    /// running | finished | failed
    pub state: String,
    /// How it ended, in words (the last lines of its output for a `kt resume`).
    pub message: String,
}

/// The session's background operations.
#[derive(Debug, Clone, Default)]
pub struct Jobs {
    list: Arc<Mutex<Vec<Job>>>,
}

impl Jobs {
    /// Records a new running job and returns its id.
    pub fn start(&self, run: &str, kind: &str) -> usize {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        let id = list.len();
        list.push(Job {
            id,
            run: run.to_string(),
            kind: kind.to_string(),
            state: "running".into(),
            message: String::new(),
        });
        id
    }

    /// Records how job `id` ended.
    pub fn finish(&self, id: usize, ok: bool, message: String) {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(job) = list.get_mut(id) {
            job.state = if ok { "finished" } else { "failed" }.into();
            job.message = message;
        }
    }

    pub fn list(&self) -> Vec<Job> {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_runs_then_ends_with_its_message() {
        let jobs = Jobs::default();
        let id = jobs.start("r1", "replay");
        assert_eq!(jobs.list()[0].state, "running");
        jobs.finish(id, false, "no GPU".into());
        assert_eq!(jobs.list()[0].state, "failed");
        assert_eq!(jobs.list()[0].message, "no GPU");
    }
}
