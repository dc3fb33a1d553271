//! Greedy local search with random restarts: evaluate all neighbours of the current point (one batch),
//! move to the best one if it improves, otherwise restart from a random unevaluated point.

use rand::rngs::StdRng;

use super::{History, SearchStrategy, random_unevaluated};
use crate::model::space::SearchSpace;

pub struct Greedy {
    rng: StdRng,
    current: Option<usize>,
}

impl Greedy {
    pub fn new(rng: StdRng) -> Self {
        Greedy { rng, current: None }
    }
}

impl SearchStrategy for Greedy {
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize> {
        loop {
            let Some(cur) = self.current else {
                let start = random_unevaluated(&mut self.rng, space, history);
                self.current = start;
                return start.into_iter().collect();
            };
            let neighbours = space.neighbours(&space.configs[cur]);
            let open: Vec<usize> = neighbours
                .iter()
                .copied()
                .filter(|i| !history.contains(*i))
                .collect();
            if !open.is_empty() {
                return open;
            }
            let here = history.get(cur).unwrap_or(f64::INFINITY);
            let best = neighbours
                .iter()
                .map(|&i| (i, history.get(i).unwrap_or(f64::INFINITY)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((i, v)) if v < here => self.current = Some(i),
                _ => self.current = None, // local optimum: restart
            }
            if self.current.is_none() && history.order.len() >= space.len() {
                return Vec::new();
            }
        }
    }
}
