//! A genetic algorithm: a population of configurations, tournament selection, uniform crossover of
//! parameter values and single-step mutation; a child that breaks a restriction is mutated again or
//! replaced by a random configuration. Each generation's new children form one batch.

use std::collections::HashMap;

use rand::RngExt;
use rand::rngs::StdRng;

use super::{History, SearchStrategy, random_unevaluated};
use crate::model::param_value::ParamValue;
use crate::model::space::{Config, SearchSpace};

const POPULATION: usize = 12;

pub struct Genetic {
    rng: StdRng,
    population: Vec<usize>,
    lookup: Option<HashMap<Config, usize>>,
}

impl Genetic {
    pub fn new(rng: StdRng) -> Self {
        Genetic {
            rng,
            population: Vec::new(),
            lookup: None,
        }
    }

    fn tournament(&mut self, history: &History) -> usize {
        let a = self.population[self.rng.random_range(0..self.population.len())];
        let b = self.population[self.rng.random_range(0..self.population.len())];
        if history.get(a).unwrap_or(f64::INFINITY) <= history.get(b).unwrap_or(f64::INFINITY) {
            a
        } else {
            b
        }
    }
}

impl SearchStrategy for Genetic {
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize> {
        let lookup = self
            .lookup
            .get_or_insert_with(|| {
                space
                    .configs
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (c.clone(), i))
                    .collect()
            })
            .clone();
        if self.population.is_empty() {
            let mut batch = Vec::new();
            for _ in 0..POPULATION {
                let mut h = history.clone();
                for &b in &batch {
                    h.record(b, 0.0);
                }
                if let Some(i) = random_unevaluated(&mut self.rng, space, &h) {
                    batch.push(i);
                }
            }
            self.population = batch.clone();
            return batch;
        }
        // survivors: the best of the population and of last generation's children
        self.population.sort_by(|a, b| {
            history
                .get(*a)
                .unwrap_or(f64::INFINITY)
                .total_cmp(&history.get(*b).unwrap_or(f64::INFINITY))
        });
        self.population.dedup();
        self.population.truncate(POPULATION);
        let mut children = Vec::new();
        for _ in 0..POPULATION * 4 {
            if children.len() >= POPULATION / 2 {
                break;
            }
            let (pa, pb) = (self.tournament(history), self.tournament(history));
            let (a, b) = (&space.configs[pa], &space.configs[pb]);
            let mut child: Vec<(String, ParamValue)> =
                a.0.iter()
                    .zip(&b.0)
                    .map(|(x, y)| {
                        if self.rng.random::<bool>() {
                            x.clone()
                        } else {
                            y.clone()
                        }
                    })
                    .collect();
            let mut found = None;
            for _ in 0..8 {
                if self.rng.random::<f64>() < 0.5 || found.is_none() {
                    // mutate one parameter by one step in its value list
                    let p = self.rng.random_range(0..space.params.len());
                    let values = &space.params[p].values;
                    if let Some(pos) = values.iter().position(|v| *v == child[p].1) {
                        let step: i64 = if self.rng.random::<bool>() { 1 } else { -1 };
                        let np = (pos as i64 + step).clamp(0, values.len() as i64 - 1) as usize;
                        child[p].1 = values[np].clone();
                    }
                }
                if let Some(&i) = lookup.get(&Config(child.clone()))
                    && !history.contains(i)
                    && !children.contains(&i)
                {
                    found = Some(i);
                    break;
                }
            }
            let pick = found.or_else(|| {
                let mut h = history.clone();
                for &c in &children {
                    h.record(c, 0.0);
                }
                random_unevaluated(&mut self.rng, space, &h)
            });
            if let Some(i) = pick {
                children.push(i);
            }
        }
        self.population.extend(children.iter().copied());
        children
    }
}
