//! Reading a child's stdout and stderr concurrently (one thread each, so neither pipe can fill up and stall the
//! child while kt waits on the other), with a cap on what is kept.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type BoxedReader = Box<dyn Read + Send>;
type Sink = Arc<Mutex<Vec<u8>>>;

/// Both output streams of a one-shot run, being read.
pub(crate) struct Capture {
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    overflow: Arc<AtomicBool>,
    done: Receiver<()>,
    readers: usize,
}

impl Capture {
    /// Starts one reader thread per stream. `cap` bounds stdout + stderr together; past it the overflow flag is
    /// raised and further output is read and discarded (so that the child never blocks on a full pipe before kt
    /// kills it).
    pub fn start(
        stdout: Option<impl Read + Send + 'static>,
        stderr: Option<impl Read + Send + 'static>,
        cap: usize,
    ) -> Self {
        let total = Arc::new(AtomicUsize::new(0));
        let overflow = Arc::new(AtomicBool::new(false));
        let (tx, done) = channel();
        let mut capture = Capture {
            stdout: Arc::default(),
            stderr: Arc::default(),
            overflow: overflow.clone(),
            done,
            readers: 0,
        };
        let streams: [(Option<BoxedReader>, Sink); 2] = [
            (
                stdout.map(|s| Box::new(s) as BoxedReader),
                capture.stdout.clone(),
            ),
            (
                stderr.map(|s| Box::new(s) as BoxedReader),
                capture.stderr.clone(),
            ),
        ];
        for (stream, sink) in streams {
            let Some(mut stream) = stream else { continue };
            let (total, overflow, tx) = (total.clone(), overflow.clone(), tx.clone());
            capture.readers += 1;
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match stream.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    };
                    let before = total.fetch_add(n, Ordering::SeqCst);
                    let keep = cap.saturating_sub(before).min(n);
                    if keep > 0 {
                        sink.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend_from_slice(&buf[..keep]);
                    }
                    if before + n > cap {
                        overflow.store(true, Ordering::SeqCst);
                    }
                }
                let _ = tx.send(());
            });
        }
        capture
    }

    pub fn overflowed(&self) -> bool {
        self.overflow.load(Ordering::SeqCst)
    }

    /// Waits up to `grace` for both streams to reach end-of-file and returns what was kept and whether the cap
    /// was exceeded. A process that left
    /// the sandbox's group could hold a pipe open forever; its reader thread is then abandoned rather than
    /// blocking kt.
    pub fn finish(self, grace: Duration) -> (Vec<u8>, Vec<u8>, bool) {
        let deadline = Instant::now() + grace;
        for _ in 0..self.readers {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done.recv_timeout(left).is_err() {
                tracing::warn!(
                    "a sandboxed process kept its output pipe open after the run ended; output may be cut short"
                );
                break;
            }
        }
        let take = |m: &Arc<Mutex<Vec<u8>>>| {
            std::mem::take(&mut *m.lock().unwrap_or_else(|p| p.into_inner()))
        };
        (take(&self.stdout), take(&self.stderr), self.overflowed())
    }
}

/// The last bytes a long-lived child wrote to stderr (and stdout, when the protocol runs on another pipe), for
/// error messages when the GPU worker dies.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutputTail {
    buf: Arc<Mutex<Vec<u8>>>,
}

impl OutputTail {
    /// Starts a reader thread that appends `stream` to the tail, keeping the last `keep` bytes.
    pub fn follow(&self, mut stream: impl Read + Send + 'static, keep: usize) {
        let buf = self.buf.clone();
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 16 * 1024];
            loop {
                match stream.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut b = buf.lock().unwrap_or_else(|p| p.into_inner());
                        b.extend_from_slice(&chunk[..n]);
                        let excess = b.len().saturating_sub(keep);
                        if excess > 0 {
                            b.drain(..excess);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        });
    }

    pub fn snapshot(&self) -> Vec<u8> {
        self.buf.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
