//! The live display of an experiment: one bar of cells done out of all, with counts of running, failed and
//! over-budget cells and an estimate of the time left. The estimate uses only cells run by this invocation
//! (skipped cells took no time) and divides by the number of workers.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::ledger::CellStatus;

#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    /// Without a terminal the bar cannot draw: then each finished cell is one plain line on stderr, so
    /// logs (CI, SLURM, `nohup`) still show progress.
    lines: bool,
    workers: usize,
    running: usize,
    failed: usize,
    over_budget: usize,
    crashed: usize,
    ran: usize,
    ran_time: Duration,
    start: Instant,
}

impl Progress {
    /// `visible` false shows nothing (tests, `--quiet`); otherwise a bar on a terminal, plain lines elsewhere.
    pub fn new(total: usize, already_done: usize, workers: usize, visible: bool) -> Progress {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let lines = visible && !terminal;
        let target = if visible && terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        let style = ProgressStyle::with_template("{bar:32.cyan/blue} {pos}/{len} cells  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_position(already_done as u64);
        bar.enable_steady_tick(Duration::from_millis(500));
        let mut p = Progress {
            bar,
            lines,
            workers: workers.max(1),
            running: 0,
            failed: 0,
            over_budget: 0,
            crashed: 0,
            ran: 0,
            ran_time: Duration::ZERO,
            start: Instant::now(),
        };
        p.refresh();
        p
    }

    pub fn started(&mut self) {
        self.running += 1;
        self.refresh();
    }

    /// A cell ended with `status` after `took` (zero for cells recorded without running).
    pub fn ended(&mut self, status: Option<CellStatus>, took: Duration, line: &str) {
        self.running = self.running.saturating_sub(1);
        match status {
            Some(CellStatus::Failed) => self.failed += 1,
            Some(CellStatus::OverBudget) => self.over_budget += 1,
            Some(s) if s.is_infrastructure() => self.crashed += 1,
            _ => {}
        }
        if status.is_some_and(CellStatus::is_final) {
            self.bar.inc(1);
        }
        if !took.is_zero() {
            self.ran += 1;
            self.ran_time += took;
        }
        if self.lines {
            let (done, total) = (self.bar.position(), self.bar.length().unwrap_or(0));
            eprintln!("[{done}/{total}] {line}");
        } else {
            self.bar.println(line);
        }
        self.refresh();
    }

    /// Estimated time left: remaining cells × mean cell time ÷ workers.
    pub fn eta(&self) -> Option<Duration> {
        if self.ran == 0 {
            return None;
        }
        let remaining = self
            .bar
            .length()
            .unwrap_or(0)
            .saturating_sub(self.bar.position());
        let mean = self.ran_time / u32::try_from(self.ran).unwrap_or(u32::MAX);
        Some(
            mean * u32::try_from(remaining).unwrap_or(u32::MAX)
                / u32::try_from(self.workers).unwrap_or(1),
        )
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    fn refresh(&mut self) {
        let eta = self.eta().map_or_else(
            || "ETA unknown".to_string(),
            |d| format!("ETA {}", human(d)),
        );
        self.bar.set_message(format!(
            "running {} · failed {} · over budget {} · to resume {} · {eta}",
            self.running, self.failed, self.over_budget, self.crashed
        ));
    }
}

/// `1h02m`, `4m10s`, `12s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_is_remaining_cells_times_mean_time_over_workers() {
        let mut p = Progress::new(10, 2, 2, false);
        assert_eq!(p.eta(), None);
        p.started();
        p.ended(Some(CellStatus::Finished), Duration::from_secs(10), "a");
        p.started();
        p.ended(Some(CellStatus::Failed), Duration::from_secs(30), "b");
        // 6 cells left, 20 s each, 2 workers
        assert_eq!(p.eta(), Some(Duration::from_secs(60)));
        assert_eq!(human(Duration::from_secs(3720)), "1h02m");
    }
}
