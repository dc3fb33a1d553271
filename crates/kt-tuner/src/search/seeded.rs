//! Seeds first: configurations someone expects to win (the LLM that wrote the kernel, a user) are measured
//! before the strategy's own proposals, so that racing (`crate::check::racing`) has a strong best to race
//! against from the first configurations on, and slow ones stop after one launch. The strategy itself is
//! unchanged: its first batch follows the seeds (in one batch, so the compiler pool still works ahead over
//! all of it), and later batches are its own.

use super::{History, SearchStrategy};
use crate::model::space::{Config, SearchSpace};

/// A strategy whose first batch starts with the seeds.
pub struct Seeded {
    seeds: Vec<Config>,
    inner: Box<dyn SearchStrategy>,
    first: bool,
}

impl Seeded {
    /// `seeds` may name only some parameters: each stands for the first configuration of the space that has
    /// its values (none when no configuration has them, e.g. a restriction excludes it).
    pub fn wrap(seeds: Vec<Config>, inner: Box<dyn SearchStrategy>) -> Box<dyn SearchStrategy> {
        if seeds.is_empty() {
            return inner;
        }
        Box::new(Seeded {
            seeds,
            inner,
            first: true,
        })
    }
}

/// The space index each seed stands for, in the seeds' order, without repeats.
pub fn seed_indices(space: &SearchSpace, seeds: &[Config]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for seed in seeds {
        let found = space.configs.iter().position(|c| {
            seed.0
                .iter()
                .all(|(name, value)| c.value(name) == Some(value))
        });
        if let Some(i) = found.filter(|i| !out.contains(i)) {
            out.push(i);
        }
    }
    out
}

impl SearchStrategy for Seeded {
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize> {
        let inner = self.inner.next_batch(space, history);
        if !std::mem::take(&mut self.first) {
            return inner;
        }
        let mut batch: Vec<usize> = seed_indices(space, &self.seeds)
            .into_iter()
            .filter(|i| !history.contains(*i))
            .collect();
        let seeded: std::collections::HashSet<usize> = batch.iter().copied().collect();
        batch.extend(inner.into_iter().filter(|i| !seeded.contains(i)));
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::space::TunableParam;
    use crate::search::Strategy;

    fn space() -> SearchSpace {
        SearchSpace::build(
            &[
                TunableParam::new("block_size_x", [32, 64, 128]),
                TunableParam::new("tile", [1, 2]),
            ],
            &[],
            &Default::default(),
            Some(1024),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn seeds_come_first_and_the_whole_space_still_follows() {
        let s = space();
        let seeds = vec![
            Config::ints([("block_size_x", 128), ("tile", 2)]),
            Config::ints([("tile", 2)]),
            Config::ints([("block_size_x", 999)]),
        ];
        let mut strategy = Seeded::wrap(seeds, Strategy::BruteForce.build(1));
        let batch = strategy.next_batch(&s, &History::default());
        assert_eq!(
            s.configs[batch[0]],
            Config::ints([("block_size_x", 128), ("tile", 2)])
        );
        // a partial seed stands for the first configuration with its values
        assert_eq!(
            s.configs[batch[1]],
            Config::ints([("block_size_x", 32), ("tile", 2)])
        );
        let mut sorted = batch.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..s.len()).collect::<Vec<_>>(),
            "each once: {batch:?}"
        );
    }

    #[test]
    fn without_seeds_the_strategy_is_unchanged() {
        let s = space();
        let mut plain = Strategy::BruteForce.build(1);
        let mut seeded = Seeded::wrap(vec![], Strategy::BruteForce.build(1));
        let h = History::default();
        assert_eq!(plain.next_batch(&s, &h), seeded.next_batch(&s, &h));
    }
}
