//! Search strategies behind one trait. A strategy proposes batches of configurations (indices into the
//! space); the driver evaluates them (compiling the whole batch ahead on the thread pool) and records the
//! objective. A failed configuration counts as infinitely slow, so every strategy simply avoids it.

mod annealing;
mod brute_force;
mod genetic;
mod greedy;
mod random;
pub mod seeded;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

use crate::model::space::SearchSpace;

/// What has been measured so far: objective (milliseconds; infinity for failures) per configuration.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub objective: HashMap<usize, f64>,
    pub order: Vec<usize>,
}

impl History {
    pub fn record(&mut self, index: usize, value: f64) {
        if self.objective.insert(index, value).is_none() {
            self.order.push(index);
        }
    }

    pub fn get(&self, index: usize) -> Option<f64> {
        self.objective.get(&index).copied()
    }

    pub fn contains(&self, index: usize) -> bool {
        self.objective.contains_key(&index)
    }

    pub fn best(&self) -> Option<(usize, f64)> {
        self.order
            .iter()
            .map(|&i| (i, self.objective[&i]))
            .filter(|(_, v)| v.is_finite())
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
}

pub trait SearchStrategy: Send {
    /// The next configurations to evaluate (not yet in `history`); empty when the strategy is done.
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize>;
}

/// The strategies, by name (the CLI's `--strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    BruteForce,
    Random,
    Greedy,
    Annealing,
    Genetic,
}

impl Strategy {
    pub fn parse(name: &str) -> Option<Strategy> {
        Some(match name {
            "brute_force" | "brute-force" => Strategy::BruteForce,
            "random" | "random_sample" => Strategy::Random,
            "greedy" | "greedy_ils" | "local" => Strategy::Greedy,
            "annealing" | "simulated_annealing" => Strategy::Annealing,
            "genetic" | "genetic_algorithm" => Strategy::Genetic,
            _ => return None,
        })
    }

    pub fn build(self, seed: u64) -> Box<dyn SearchStrategy> {
        let rng = StdRng::seed_from_u64(seed);
        match self {
            Strategy::BruteForce => Box::new(brute_force::BruteForce),
            Strategy::Random => Box::new(random::RandomSample::new(rng)),
            Strategy::Greedy => Box::new(greedy::Greedy::new(rng)),
            Strategy::Annealing => Box::new(annealing::Annealing::new(rng)),
            Strategy::Genetic => Box::new(genetic::Genetic::new(rng)),
        }
    }
}

/// When to stop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub max_evals: Option<usize>,
    pub time_limit: Option<Duration>,
}

/// Configurations evaluated between two looks at the time limit.
pub const TIME_LIMITED_CHUNK: usize = 32;

/// Runs a strategy to the end or to the limits. `evaluate` gets a batch and returns one objective per entry.
pub fn drive(
    strategy: &mut dyn SearchStrategy,
    space: &SearchSpace,
    limits: Limits,
    history: &mut History,
    mut evaluate: impl FnMut(&[usize]) -> Vec<f64>,
) {
    let start = Instant::now();
    let mut idle_rounds = 0;
    loop {
        if limits.time_limit.is_some_and(|t| start.elapsed() >= t) {
            return;
        }
        let remaining = limits
            .max_evals
            .map(|m| m.saturating_sub(history.order.len()));
        if remaining == Some(0) {
            return;
        }
        let mut batch: Vec<usize> = Vec::new();
        for i in strategy.next_batch(space, history) {
            if i < space.len() && !history.contains(i) && !batch.contains(&i) {
                batch.push(i);
            }
        }
        if let Some(r) = remaining {
            batch.truncate(r);
        }
        // under a time limit a whole space proposed at once (brute force) is evaluated a chunk at a time,
        // so the limit is looked at between chunks; the strategy proposes the rest again
        if limits.time_limit.is_some() {
            batch.truncate(TIME_LIMITED_CHUNK);
        }
        if batch.is_empty() {
            // A strategy that proposes nothing new twice in a row has converged.
            idle_rounds += 1;
            if idle_rounds >= 2 || history.order.len() >= space.len() {
                return;
            }
            continue;
        }
        idle_rounds = 0;
        let values = evaluate(&batch);
        for (i, v) in batch.iter().zip(values) {
            history.record(*i, if v.is_nan() { f64::INFINITY } else { v });
        }
    }
}

/// A uniformly random configuration not yet evaluated.
pub(crate) fn random_unevaluated(
    rng: &mut StdRng,
    space: &SearchSpace,
    history: &History,
) -> Option<usize> {
    use rand::RngExt;
    let open: Vec<usize> = (0..space.len()).filter(|i| !history.contains(*i)).collect();
    if open.is_empty() {
        None
    } else {
        Some(open[rng.random_range(0..open.len())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::expr::Bindings;
    use crate::model::space::{Restriction, TunableParam};

    #[test]
    fn a_time_limit_stops_a_whole_space_proposed_at_once() {
        let params = vec![TunableParam::new("x", 0..200)];
        let space = SearchSpace::build(&params, &[], &Bindings::new(), None).unwrap();
        let mut history = History::default();
        let limits = Limits {
            max_evals: None,
            time_limit: Some(std::time::Duration::from_millis(30)),
        };
        let mut strategy = brute_force::BruteForce;
        drive(&mut strategy, &space, limits, &mut history, |batch| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            vec![1.0; batch.len()]
        });
        // two chunks at most (20 ms each) before the 30 ms limit is seen, not all 200
        assert!(
            history.order.len() <= 2 * TIME_LIMITED_CHUNK,
            "{}",
            history.order.len()
        );
        assert!(history.order.len() >= TIME_LIMITED_CHUNK);
    }

    /// A bowl with its minimum at (13, 7); configurations with x == 5 "fail".
    fn synthetic() -> (SearchSpace, impl Fn(usize) -> f64 + Clone) {
        let params = vec![TunableParam::new("x", 0..20), TunableParam::new("y", 0..20)];
        let space = SearchSpace::build(
            &params,
            &[Restriction::Expr("x + y != 39".into())],
            &Bindings::new(),
            None,
        )
        .unwrap();
        let s2 = space.clone();
        let cost = move |i: usize| {
            let c = &s2.configs[i];
            let (x, y) = (c.get("x").unwrap() as f64, c.get("y").unwrap() as f64);
            if x == 5.0 {
                f64::INFINITY
            } else {
                (x - 13.0).powi(2) + (y - 7.0).powi(2) + 1.0
            }
        };
        (space, cost)
    }

    fn run(strategy: Strategy, seed: u64, max_evals: Option<usize>) -> (History, SearchSpace) {
        let (space, cost) = synthetic();
        let mut h = History::default();
        let mut s = strategy.build(seed);
        drive(
            s.as_mut(),
            &space,
            Limits {
                max_evals,
                time_limit: None,
            },
            &mut h,
            |b| b.iter().map(|&i| cost(i)).collect(),
        );
        (h, space)
    }

    #[test]
    fn brute_force_visits_every_config_once_and_finds_the_minimum() {
        let (h, space) = run(Strategy::BruteForce, 0, None);
        assert_eq!(h.order.len(), space.len());
        assert_eq!(h.best().unwrap().1, 1.0);
    }

    #[test]
    fn max_evals_is_respected_by_every_strategy() {
        for s in [
            Strategy::BruteForce,
            Strategy::Random,
            Strategy::Greedy,
            Strategy::Annealing,
            Strategy::Genetic,
        ] {
            let (h, _) = run(s, 1, Some(37));
            assert!(h.order.len() <= 37, "{s:?} evaluated {}", h.order.len());
            assert!(!h.order.is_empty());
        }
    }

    #[test]
    fn local_strategies_find_the_bowl_minimum_with_a_fraction_of_the_budget() {
        for s in [Strategy::Greedy, Strategy::Annealing, Strategy::Genetic] {
            let mut found = 0;
            for seed in 0..5 {
                let (h, _) = run(s, seed, Some(150));
                if h.best().unwrap().1 <= 2.0 {
                    found += 1;
                }
            }
            assert!(
                found >= 4,
                "{s:?} found the minimum in only {found} of 5 seeds"
            );
        }
    }

    #[test]
    fn random_sampling_is_reproducible_by_seed() {
        let (a, _) = run(Strategy::Random, 42, Some(20));
        let (b, _) = run(Strategy::Random, 42, Some(20));
        let (c, _) = run(Strategy::Random, 43, Some(20));
        assert_eq!(a.order, b.order);
        assert_ne!(a.order, c.order);
    }

    #[test]
    fn failed_configs_are_never_the_best() {
        let (h, space) = run(Strategy::Genetic, 3, Some(120));
        let (i, _) = h.best().unwrap();
        assert_ne!(space.configs[i].get("x"), Some(5));
    }

    #[test]
    fn strategy_names_parse() {
        assert_eq!(Strategy::parse("brute_force"), Some(Strategy::BruteForce));
        assert_eq!(Strategy::parse("annealing"), Some(Strategy::Annealing));
        assert_eq!(Strategy::parse("nope"), None);
    }
}
