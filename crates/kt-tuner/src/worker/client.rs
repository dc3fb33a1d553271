//! The parent's side of a worker: send a request, wait for the reply with a deadline (the watchdog), and
//! report a hang, a death or a garbled reply as a `WorkerFailure` so the caller can restart the worker and
//! carry on.

use std::io::Write;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use crate::error::TunerError;
use crate::worker::gpu_turns::GpuTurns;
use crate::worker::process::{WorkerCommand, WorkerProcess};
use crate::worker::protocol::{Reply, Request, read_frame, write_frame};

#[derive(Debug, Clone, PartialEq)]
pub enum WorkerFailure {
    /// No reply before the deadline: the worker was killed.
    Timeout { after: Duration },
    /// The worker exited (or closed the pipe) without replying.
    Died { detail: String },
    /// The reply was not a protocol frame.
    Garbage { detail: String },
}

impl std::fmt::Display for WorkerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerFailure::Timeout { after } => write!(
                f,
                "no reply within {:.1} s (hung kernel?); worker killed",
                after.as_secs_f64()
            ),
            WorkerFailure::Died { detail } => write!(f, "worker died: {detail}"),
            WorkerFailure::Garbage { detail } => write!(f, "worker sent a garbled reply: {detail}"),
        }
    }
}

pub struct WorkerClient {
    process: WorkerProcess,
    replies: Receiver<std::io::Result<(Reply, Vec<u8>)>>,
    dead: bool,
    /// Turns on the GPU shared with other kt processes, once the worker has said which GPU it has.
    turns: Option<GpuTurns>,
}

impl WorkerClient {
    pub fn start(cmd: &WorkerCommand) -> Result<Self, TunerError> {
        let process = WorkerProcess::spawn(cmd)?;
        let mut reader = process
            .replies
            .try_clone()
            .map_err(|e| TunerError::Worker(e.to_string()))?;
        let (tx, replies) = channel();
        // A reader thread turns the blocking pipe into a channel, so waiting can have a deadline.
        std::thread::spawn(move || {
            loop {
                let frame = read_frame::<Reply>(&mut reader);
                let stop = frame.is_err();
                if tx.send(frame).is_err() || stop {
                    return;
                }
            }
        });
        Ok(WorkerClient {
            process,
            replies,
            dead: false,
            turns: None,
        })
    }

    /// From now on, requests that run work on the GPU with `uuid` wait for their turn (`gpu_turns`).
    pub fn take_turns_on(&mut self, uuid: &str) {
        self.turns = GpuTurns::for_gpu(uuid);
    }

    /// How long this client has waited for its turns on the GPU.
    pub fn waited_for_turns(&self) -> Duration {
        self.turns.as_ref().map_or(Duration::ZERO, GpuTurns::waited)
    }

    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// Sends a request and waits at most `timeout` for its reply.
    pub fn request(
        &mut self,
        req: &Request,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<(Reply, Vec<u8>), WorkerFailure> {
        // the turn is waited for before the watchdog's clock starts, and held until the reply
        let _turn = match &mut self.turns {
            Some(turns) if req.runs_on_gpu() => turns.take(),
            _ => None,
        };
        self.send(req, payload)?;
        self.wait(timeout)
    }

    /// Sends a request without waiting, so the parent can work while the worker does (context creation).
    pub fn send(&mut self, req: &Request, payload: &[u8]) -> Result<(), WorkerFailure> {
        if self.dead {
            return Err(WorkerFailure::Died {
                detail: "worker already stopped".into(),
            });
        }
        if let Err(e) = write_frame(&mut self.process.stdin, req, payload) {
            return Err(self.fail_died(format!("cannot send request: {e}")));
        }
        Ok(())
    }

    /// Waits at most `timeout` for the reply to the oldest request not yet answered.
    pub fn wait(&mut self, timeout: Duration) -> Result<(Reply, Vec<u8>), WorkerFailure> {
        if self.dead {
            return Err(WorkerFailure::Died {
                detail: "worker already stopped".into(),
            });
        }
        match self.replies.recv_timeout(timeout) {
            Ok(Ok(frame)) => Ok(frame),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(self.fail_died(String::new()))
            }
            Ok(Err(e)) => {
                self.kill();
                Err(WorkerFailure::Garbage {
                    detail: e.to_string(),
                })
            }
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                Err(WorkerFailure::Timeout { after: timeout })
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.fail_died(String::new())),
        }
    }

    fn fail_died(&mut self, what: String) -> WorkerFailure {
        // give the exit and the last output a moment to arrive before reporting them
        std::thread::sleep(Duration::from_millis(50));
        let status = self
            .process
            .exit_status()
            .unwrap_or_else(|| "still running (killed)".to_string());
        self.kill();
        let tail = self.process.tail_text();
        let mut detail = format!("{what}{}{status}", if what.is_empty() { "" } else { "; " });
        if !tail.is_empty() {
            detail.push_str(&format!("; its last output: {tail}"));
        }
        WorkerFailure::Died { detail }
    }

    pub fn kill(&mut self) {
        self.dead = true;
        self.process.kill();
    }

    /// Asks the worker to exit, then makes sure it has.
    pub fn shutdown(self) {
        self.shutdown_within(Duration::ZERO);
    }

    /// Asks the worker to leave and gives it up to `grace` to exit by itself before its process group is
    /// killed: a tool wrapping the worker (compute-sanitizer) writes its report at exit.
    pub fn shutdown_within(mut self, grace: Duration) {
        let _ = write_frame(&mut self.process.stdin, &Request::Shutdown, &[]);
        let _ = self.process.stdin.flush();
        let _ = self.replies.recv_timeout(Duration::from_secs(2));
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline && self.process.exit_status().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
    }
}

impl Drop for WorkerClient {
    fn drop(&mut self) {
        if !self.dead {
            self.kill();
        }
    }
}
