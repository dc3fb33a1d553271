//! Every configuration, in the space's order (Kernel Tuner's order), as one batch so that the compiler
//! pool can work ahead of the GPU over the whole space.

use super::{History, SearchStrategy};
use crate::model::space::SearchSpace;

pub struct BruteForce;

impl SearchStrategy for BruteForce {
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize> {
        (0..space.len()).filter(|i| !history.contains(*i)).collect()
    }
}
