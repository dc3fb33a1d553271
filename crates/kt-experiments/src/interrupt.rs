//! Stopping an experiment. A [`StopSignal`] is shared by the scheduler and its workers; the first request
//! stops gracefully (no new cells; running cells get SIGINT so they checkpoint and stay resumable), a second
//! one kills running cells at once. [`StopSignal::on_interrupt`] wires it to Ctrl-C and SIGTERM (the signal
//! SLURM sends at a job's time limit).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::ExperimentError;

#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    level: Arc<AtomicU8>,
}

impl StopSignal {
    pub fn new() -> StopSignal {
        StopSignal::default()
    }

    /// Asks for a stop; a second call escalates to an immediate one.
    pub fn stop(&self) {
        let _ = self
            .level
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| Some((l + 1).min(2)));
    }

    /// Whether any stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.level.load(Ordering::SeqCst) >= 1
    }

    /// Whether running cells should be killed without waiting.
    pub fn is_immediate(&self) -> bool {
        self.level.load(Ordering::SeqCst) >= 2
    }

    /// A signal tripped by SIGINT (Ctrl-C) and SIGTERM, watched by a background thread for the life of the
    /// process.
    pub fn on_interrupt() -> Result<StopSignal, ExperimentError> {
        let signal = StopSignal::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(|e| ExperimentError::Interrupt {
                detail: e.to_string(),
            })?;
        // Register the handlers before returning, so a Ctrl-C right after start-up is not lost.
        let (mut int, mut term) = runtime
            .block_on(async {
                use tokio::signal::unix::{SignalKind, signal};
                Ok::<_, std::io::Error>((
                    signal(SignalKind::interrupt())?,
                    signal(SignalKind::terminate())?,
                ))
            })
            .map_err(|e| ExperimentError::Interrupt {
                detail: e.to_string(),
            })?;
        let watcher = signal.clone();
        std::thread::Builder::new()
            .name("kt-experiment-signals".into())
            .spawn(move || {
                runtime.block_on(async move {
                    loop {
                        tokio::select! {
                            _ = int.recv() => {},
                            _ = term.recv() => {},
                        }
                        watcher.stop();
                        if watcher.is_immediate() {
                            eprintln!("second interrupt: killing running cells");
                        } else {
                            eprintln!("interrupt: stopping running cells (they stay resumable); press Ctrl-C again to kill them");
                        }
                    }
                });
            })
            .map_err(|e| ExperimentError::Interrupt { detail: e.to_string() })?;
        Ok(signal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_stop_escalates_to_immediate() {
        let s = StopSignal::new();
        assert!(!s.is_stopped());
        s.clone().stop();
        assert!(s.is_stopped() && !s.is_immediate());
        s.stop();
        s.stop();
        assert!(s.is_immediate());
    }
}
