//! Starting and killing the worker process. The protocol runs over the child's stdin (requests) and an
//! extra pipe on fd 3 (replies): kernel `printf` writes to the process's stdout, so stdout cannot carry
//! frames. The child gets its own process group so that a kill reaches anything it started.
//! (kt-sandbox's policy runner can replace this file once it offers an extra-fd pipe.)

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use crate::error::TunerError;

/// The fd on which the worker writes its replies.
pub const PROTOCOL_FD: i32 = 3;
/// Set in the worker's environment so `serve` knows the protocol fd was set up.
pub const PROTOCOL_ENV: &str = "KT_TUNER_PROTOCOL_FD";

/// How to start a worker: kt's own binary in its hidden mode, or a test executable.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl WorkerCommand {
    /// `<this executable> __tuner-worker`: what the `kt` binary uses.
    pub fn current_exe() -> Result<Self, TunerError> {
        let program = std::env::current_exe().map_err(|e| {
            TunerError::Worker(format!(
                "cannot find the running executable to start the worker: {e}"
            ))
        })?;
        Ok(WorkerCommand {
            program,
            args: vec!["__tuner-worker".into()],
            env: Vec::new(),
        })
    }
}

pub struct WorkerProcess {
    pub child: Child,
    pub stdin: ChildStdin,
    pub replies: File,
    /// The last few KB of the worker's stdout/stderr (kernel printf, CUDA messages), for error reports.
    pub output_tail: Arc<Mutex<VecDeque<u8>>>,
}

const TAIL: usize = 4096;

fn keep_tail(mut from: impl Read + Send + 'static, tail: Arc<Mutex<VecDeque<u8>>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut t) = tail.lock() {
                t.extend(&buf[..n]);
                while t.len() > TAIL {
                    t.pop_front();
                }
            }
        }
    });
}

impl WorkerProcess {
    pub fn spawn(cmd: &WorkerCommand) -> Result<Self, TunerError> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two fds into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(TunerError::Worker(format!(
                "pipe2: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: both fds were just created and are owned here exactly once.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let write_raw = fds[1];
        let mut c = Command::new(&cmd.program);
        c.args(&cmd.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env(PROTOCOL_ENV, PROTOCOL_FD.to_string());
        for (k, v) in &cmd.env {
            c.env(k, v);
        }
        // SAFETY: only async-signal-safe calls (setpgid, dup2) between fork and exec.
        unsafe {
            c.pre_exec(move || {
                libc::setpgid(0, 0);
                if write_raw == PROTOCOL_FD {
                    // already in place: dup2 onto itself would leave close-on-exec set
                    libc::fcntl(PROTOCOL_FD, libc::F_SETFD, 0);
                } else if libc::dup2(write_raw, PROTOCOL_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = c.spawn().map_err(|e| {
            TunerError::Worker(format!("cannot start {}: {e}", cmd.program.display()))
        })?;
        drop(write_end);
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| TunerError::Worker("worker has no stdin".into()))?;
        let output_tail: Arc<Mutex<VecDeque<u8>>> = Arc::default();
        if let Some(out) = child.stdout.take() {
            keep_tail(out, output_tail.clone());
        }
        if let Some(err) = child.stderr.take() {
            keep_tail(err, output_tail.clone());
        }
        Ok(WorkerProcess {
            child,
            stdin,
            replies: File::from(read_end),
            output_tail,
        })
    }

    /// Kills the whole process group and reaps the child.
    pub fn kill(&mut self) {
        let pid = self.child.id() as i32;
        // SAFETY: signalling our own child's process group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn tail_text(&self) -> String {
        self.output_tail
            .lock()
            .map(|t| {
                String::from_utf8_lossy(&t.iter().copied().collect::<Vec<u8>>())
                    .trim()
                    .to_string()
            })
            .unwrap_or_default()
    }
}
