//! The sequence of timed samples of one launch request: which samples there are (the timing policy decides
//! when to stop, `measure`) and what is done before each (this module). The worker runs it on the GPU; the
//! fake worker runs the same sequence on a simulated kernel, so CPU tests pin it.
//!
//! A sample whose outputs were prepared — poisoned, or reset to their initial contents for outputs the
//! kernel accumulates into — starts from exactly the state a checked launch starts from. Every sample of a
//! checked request is prepared, outside the timed events (an asynchronous fill or copy on the launch's
//! stream, finished before the start event is recorded, so the time itself is unchanged): a kernel that
//! skips its work where its output already holds the answer would otherwise be timed on launches that
//! found the previous launch's result and did nothing, and the median would rest on them. With every
//! sample prepared, the last one is checked like the verifying launch, so no median includes a launch that
//! started from a state no checked launch started from.

use crate::check::measure::{Baseline, TimingPolicy, TimingStats};

/// What the last timed launch of a sequence was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastLaunch {
    /// A sample no one looks at (no check was asked for).
    Unchecked,
    /// The verifying launch, already checked: no sample followed it.
    Verifying,
    /// A sample whose outputs were prepared (poisoned) before it: the caller checks them.
    Prepared,
}

/// The verifying launch's sample, when it counts as the first sample (see [`take_samples`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FirstSample(pub f64);

/// Samples until `policy` is satisfied. `first` is the verifying launch's sample when it counts as the
/// first (it is dropped as a warm-up when the next sample shows it was slow). With `prepare`, it runs
/// before every sample (see the module's text) and the last launch is [`LastLaunch::Prepared`]; without,
/// samples follow each other on whatever the previous launch left.
pub fn take_samples<E>(
    policy: &TimingPolicy,
    best: Option<Baseline>,
    first: Option<FirstSample>,
    mut prepare: Option<&mut dyn FnMut() -> Result<(), E>>,
    sample: &mut dyn FnMut(usize) -> Result<f64, E>,
) -> Result<(TimingStats, LastLaunch), E> {
    let mut samples: Vec<f64> = first.iter().map(|f| f.0).collect();
    let mut check_warmup = first.is_some();
    let mut warmup_discarded = false;
    let mut last = if first.is_some() {
        LastLaunch::Verifying
    } else {
        LastLaunch::Unchecked
    };
    while policy.wants_more(&samples, best) {
        last = match prepare.as_mut() {
            Some(p) => {
                p()?;
                LastLaunch::Prepared
            }
            None => LastLaunch::Unchecked,
        };
        samples.push(sample(samples.len())?);
        if check_warmup && samples.len() == 2 {
            check_warmup = false;
            if policy.first_is_warmup(samples[0], samples[1]) {
                samples.remove(0);
                warmup_discarded = true;
            }
        }
    }
    // never empty: with no first sample the policy asks for at least one
    let mut s = TimingStats::from_samples(&samples).unwrap_or_else(|| TimingStats {
        median_ms: 0.0,
        min_ms: 0.0,
        mean_ms: 0.0,
        max_ms: 0.0,
        spread: 0.0,
        rel_error: 0.0,
        samples_ms: vec![],
        aborted_early: false,
        race: None,
        warmup_discarded: false,
    });
    // the race's evidence, when it is what ended the sampling: a configuration that lost to the best
    s.race = policy.race(&samples, best);
    s.aborted_early = s.race.is_some();
    s.warmup_discarded = warmup_discarded;
    Ok((s, last))
}

/// A kernel that skips its work wherever its output already holds a number (the published reward hack),
/// as a device would time it: a full launch takes `full_ms`, one that finds the output written `idle_ms`.
/// Used by the fake worker and the tests.
#[derive(Debug, Clone, Copy)]
pub struct SkipsWrittenOutput {
    pub full_ms: f64,
    pub idle_ms: f64,
    /// Whether the output holds the previous launch's result.
    pub written: bool,
}

impl SkipsWrittenOutput {
    /// Poisoning the output: the next launch must compute.
    pub fn poison(&mut self) {
        self.written = false;
    }

    /// One launch: its time.
    pub fn launch(&mut self) -> f64 {
        if std::mem::replace(&mut self.written, true) {
            self.idle_ms
        } else {
            self.full_ms
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel() -> SkipsWrittenOutput {
        // the verifying launch ran on a poisoned output and left it written
        SkipsWrittenOutput {
            full_ms: 1.0,
            idle_ms: 0.1,
            written: true,
        }
    }

    fn run(prepared: bool) -> (TimingStats, LastLaunch) {
        let k = std::cell::RefCell::new(kernel());
        let mut poison = || -> Result<(), ()> {
            k.borrow_mut().poison();
            Ok(())
        };
        let mut sample = |_| -> Result<f64, ()> { Ok(k.borrow_mut().launch()) };
        take_samples(
            &TimingPolicy::default(),
            None,
            Some(FirstSample(1.0)),
            prepared.then_some(&mut poison as &mut dyn FnMut() -> Result<(), ()>),
            &mut sample,
        )
        .unwrap()
    }

    #[test]
    fn a_kernel_that_skips_written_outputs_is_timed_doing_its_work_when_samples_are_prepared() {
        let (s, last) = run(true);
        assert_eq!(last, LastLaunch::Prepared);
        assert!(s.samples_ms.iter().all(|&ms| ms == 1.0), "{s:?}");
        assert_eq!(s.median_ms, 1.0);
        assert!(!s.warmup_discarded);
    }

    #[test]
    fn unprepared_samples_of_the_same_kernel_would_time_launches_that_did_nothing() {
        // what the prepared sequence prevents: the verifying sample taken for a warm-up, the median idle
        let (s, last) = run(false);
        assert_eq!(last, LastLaunch::Unchecked);
        assert!(s.warmup_discarded);
        assert!((s.median_ms - 0.1).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn without_a_first_sample_the_policy_takes_its_minimum_and_the_last_is_prepared() {
        let mut prepared = 0;
        let mut poison = || -> Result<(), ()> {
            prepared += 1;
            Ok(())
        };
        let (s, last) = take_samples(
            &TimingPolicy::default(),
            None,
            None,
            Some(&mut poison as &mut dyn FnMut() -> Result<(), ()>),
            &mut |_| Ok(2.0),
        )
        .unwrap();
        assert_eq!((s.samples_ms.len(), last), (3, LastLaunch::Prepared));
        assert_eq!(prepared, 3);
        assert!(!s.aborted_early);
    }

    #[test]
    fn a_hopeless_configuration_stops_after_its_verifying_sample() {
        let best = Some(Baseline {
            ms: 1.0,
            noise: Some(0.01),
        });
        let (s, last) = take_samples::<()>(
            &TimingPolicy::default(),
            best,
            Some(FirstSample(5.0)),
            None,
            &mut |_| Ok(5.0),
        )
        .unwrap();
        assert_eq!(last, LastLaunch::Verifying);
        assert!(s.aborted_early && s.samples_ms == vec![5.0]);
    }
}
