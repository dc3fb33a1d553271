//! Uniform random sampling without replacement, in batches so compilation runs ahead.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use super::{History, SearchStrategy};
use crate::model::space::SearchSpace;

const BATCH: usize = 16;

pub struct RandomSample {
    rng: StdRng,
    order: Option<Vec<usize>>,
}

impl RandomSample {
    pub fn new(rng: StdRng) -> Self {
        RandomSample { rng, order: None }
    }
}

impl SearchStrategy for RandomSample {
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize> {
        let rng = &mut self.rng;
        let order = self.order.get_or_insert_with(|| {
            let mut v: Vec<usize> = (0..space.len()).collect();
            v.shuffle(rng);
            v
        });
        order.retain(|i| !history.contains(*i));
        order.iter().take(BATCH).copied().collect()
    }
}
