//! Simulated annealing: a random walk over neighbours that accepts a worse point with probability
//! exp(-relative worsening / temperature); the temperature falls geometrically, and a walk stuck among
//! evaluated points jumps to a random unevaluated one.

use rand::RngExt;
use rand::rngs::StdRng;

use super::{History, SearchStrategy, random_unevaluated};
use crate::model::space::SearchSpace;

pub struct Annealing {
    rng: StdRng,
    current: Option<usize>,
    temperature: f64,
}

impl Annealing {
    pub fn new(rng: StdRng) -> Self {
        Annealing {
            rng,
            current: None,
            temperature: 1.0,
        }
    }
}

impl SearchStrategy for Annealing {
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize> {
        for _ in 0..10_000 {
            self.temperature = (self.temperature * 0.97).max(0.01);
            let Some(cur) = self.current.filter(|c| history.contains(*c)) else {
                if let Some(c) = self.current {
                    return vec![c];
                }
                let start = random_unevaluated(&mut self.rng, space, history);
                self.current = start;
                return start.into_iter().collect();
            };
            let neighbours = space.neighbours(&space.configs[cur]);
            if neighbours.is_empty() {
                self.current = None;
                continue;
            }
            let cand = neighbours[self.rng.random_range(0..neighbours.len())];
            let Some(v) = history.get(cand) else {
                return vec![cand];
            };
            let here = history.get(cur).unwrap_or(f64::INFINITY);
            let accept = if v <= here {
                true
            } else if !v.is_finite() {
                false
            } else {
                let worse = (v - here) / here.max(1e-12);
                self.rng.random::<f64>() < (-worse / self.temperature).exp()
            };
            if accept {
                self.current = Some(cand);
            }
            if neighbours.iter().all(|i| history.contains(*i)) && self.rng.random::<f64>() < 0.2 {
                self.current = random_unevaluated(&mut self.rng, space, history);
                if let Some(c) = self.current {
                    return vec![c];
                }
                return Vec::new();
            }
        }
        random_unevaluated(&mut self.rng, space, history)
            .into_iter()
            .collect()
    }
}
