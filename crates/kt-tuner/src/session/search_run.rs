//! The search: batches from the strategy, each configuration measured as soon as its module is ready (the
//! compiler pool works ahead of the GPU), every measurement appended to the results cache and reported as
//! progress.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Instant;

use crate::error::TunerError;
use crate::export::cache::ResultCache;
use crate::model::outcome::{Measurement, Phases, Progress};
use crate::model::space::SearchSpace;
use crate::model::tunable_kernel::TunableKernel;
use crate::search::{History, SearchStrategy};
use crate::session::compile_queue::Submitted;
use crate::session::engine::Engine;
use crate::session::evaluate::{Bench, evaluate};
use crate::session::plan::Plan;

/// The search's state between batches.
pub(super) struct SearchRun<'a> {
    pub e: &'a mut Engine,
    pub kernel: &'a TunableKernel,
    pub plan: &'a Plan,
    /// Compilations submitted ahead, by configuration index.
    pub tickets: HashMap<usize, Submitted>,
    pub results: Option<ResultCache>,
    pub bench: Bench<'a>,
    pub phases: &'a mut Phases,
    pub progress: &'a mut dyn FnMut(&Progress),
    pub measurements: Vec<Measurement>,
    pub total: usize,
    /// The first error that stops the run; the rest of the search is skipped.
    pub setup_error: Option<TunerError>,
}

impl SearchRun<'_> {
    /// Evaluates one batch from the strategy; returns one objective per entry (infinite for a failure).
    pub fn evaluate_batch(&mut self, batch: &[usize]) -> Vec<f64> {
        let mut cached = HashMap::new();
        // submit the whole batch so compilation runs ahead of the GPU
        for &i in batch {
            let config = &self.plan.space.configs[i];
            if let Some(c) = self.results.as_ref().and_then(|r| r.get(config)) {
                cached.insert(i, c.clone());
                continue;
            }
            if let Entry::Vacant(slot) = self.tickets.entry(i) {
                match self.e.queue.submit(
                    self.kernel,
                    config,
                    &self.plan.scalars0,
                    self.plan.grid_defines,
                ) {
                    Ok(s) => {
                        slot.insert(s);
                    }
                    Err(err) => {
                        self.setup_error.get_or_insert(err);
                    }
                }
            }
        }
        // cached results first, then each configuration as soon as its module is ready
        let mut out = vec![f64::INFINITY; batch.len()];
        let mut pending = Vec::new();
        for (pos, &i) in batch.iter().enumerate() {
            match cached.remove(&i) {
                Some(mut c) => {
                    c.from_cache = true;
                    out[pos] = c.objective_ms().unwrap_or(f64::INFINITY);
                    self.record(c);
                }
                None => pending.push(pos),
            }
        }
        let mut measured: HashMap<usize, f64> = HashMap::new();
        while self.setup_error.is_none() && !pending.is_empty() {
            let pos = match self.next_ready(batch, &pending) {
                Ok(p) => p,
                Err(err) => {
                    self.setup_error.get_or_insert(err);
                    break;
                }
            };
            pending.retain(|p| *p != pos);
            let i = batch[pos];
            // a configuration the batch names twice is measured once
            if let Some(v) = measured.get(&i) {
                out[pos] = *v;
                continue;
            }
            match self.measure(i) {
                Ok(m) => {
                    out[pos] = m.objective_ms().unwrap_or(f64::INFINITY);
                    measured.insert(i, out[pos]);
                    self.record(m);
                }
                Err(err) => {
                    self.setup_error.get_or_insert(err);
                }
            }
        }
        out
    }

    /// The position in `batch` of the pending configuration to measure next: the first (in the batch's
    /// order) whose module is ready, waiting for the compiler pool when none is. A configuration measured
    /// already in this batch, or one never submitted (its measurement reports why), goes first.
    fn next_ready(&mut self, batch: &[usize], pending: &[usize]) -> Result<usize, TunerError> {
        let mut tickets = Vec::new();
        for &pos in pending {
            match self.tickets.get(&batch[pos]) {
                Some(s) if !measured_earlier_in_batch(batch, pending, pos) => {
                    tickets.push((s.ticket, pos))
                }
                _ => return Ok(pos),
            }
        }
        let waited = Instant::now();
        let order: Vec<usize> = tickets.iter().map(|(t, _)| *t).collect();
        let ready = self.e.queue.first_ready(&order)?;
        self.phases.compile_wait_ms += waited.elapsed().as_secs_f64() * 1e3;
        ready
            .and_then(|t| tickets.iter().find(|(tk, _)| *tk == t).map(|(_, p)| *p))
            .ok_or_else(|| TunerError::Worker("no configuration left to measure".into()))
    }

    /// Evaluates configuration `i` and appends it to the results cache.
    fn measure(&mut self, i: usize) -> Result<Measurement, TunerError> {
        let m = evaluate(
            self.e,
            self.kernel,
            &self.plan.space.configs[i],
            self.tickets.get(&i).cloned(),
            &mut self.bench,
            self.phases,
        )?;
        if let Some(r) = self.results.as_mut()
            && let Err(err) = r.append(&m)
        {
            tracing::warn!("results cache: {err}");
        }
        Ok(m)
    }

    /// Keeps a measurement and reports progress.
    fn record(&mut self, m: Measurement) {
        let v = m.objective_ms().unwrap_or(f64::INFINITY);
        let best = self
            .measurements
            .iter()
            .filter_map(|m| m.objective_ms())
            .chain(std::iter::once(v))
            .filter(|v| v.is_finite())
            .min_by(f64::total_cmp);
        (self.progress)(&Progress {
            done: self.measurements.len() + 1,
            total: self.total,
            config: m.config.clone(),
            verdict: m.verdict.short().to_string(),
            time_ms: m.objective_ms(),
            best_ms: best,
        });
        self.measurements.push(m);
    }
}

/// Hands the strategy's first batch (already submitted for compilation) to the driver before asking the
/// strategy again.
pub(super) struct Prefetched<'a> {
    pub first: Option<Vec<usize>>,
    pub inner: &'a mut dyn SearchStrategy,
}

impl SearchStrategy for Prefetched<'_> {
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize> {
        match self.first.take() {
            Some(b) if !b.is_empty() => b,
            _ => self.inner.next_batch(space, history),
        }
    }
}

/// Whether the configuration at `pos` of `batch` also sits at an earlier position that is no longer `pending`
/// (then its module was taken already and its result is reused).
fn measured_earlier_in_batch(batch: &[usize], pending: &[usize], pos: usize) -> bool {
    batch[..pos]
        .iter()
        .enumerate()
        .any(|(p, &i)| i == batch[pos] && !pending.contains(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_named_twice_reuses_the_first_measurement_once_it_is_taken() {
        // configurations 7, 3, 7: position 2 repeats position 0
        let batch = [7, 3, 7];
        assert!(
            !measured_earlier_in_batch(&batch, &[0, 1, 2], 2),
            "position 0 is still pending"
        );
        assert!(
            measured_earlier_in_batch(&batch, &[1, 2], 2),
            "position 0 was taken"
        );
        assert!(
            !measured_earlier_in_batch(&batch, &[2], 1),
            "3 is named once"
        );
        assert!(
            !measured_earlier_in_batch(&batch, &[0], 0),
            "nothing comes before position 0"
        );
    }
}
