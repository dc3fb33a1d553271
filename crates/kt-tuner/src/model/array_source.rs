//! Where an array's bytes come from: a .npy file, or a seeded distribution the worker generates on the GPU.
//! Shared by kernel arguments (`args`) and `__constant__` symbols (`constants`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::TunerError;

/// How the worker fills an array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Distribution {
    /// Standard normal.
    Randn,
    /// Normal with standard deviation `sigma` (the large-values test: magnitudes randn never reaches).
    RandnScaled {
        sigma: f64,
    },
    /// Uniform in [0, 1).
    Rand,
    Zeros,
    Ones,
    /// Every element `value` (the skewed test: integer data that all hold one value).
    Fill {
        value: f64,
    },
    /// Uniform integers in [lo, hi).
    RandInt {
        lo: i64,
        hi: i64,
    },
}

impl Distribution {
    pub fn parse(text: &str) -> Result<Self, TunerError> {
        Ok(match text {
            "randn" => Distribution::Randn,
            "rand" => Distribution::Rand,
            "zeros" => Distribution::Zeros,
            "ones" => Distribution::Ones,
            t if t.starts_with("randint:") => {
                let parts: Vec<&str> = t.split(':').collect();
                let bad = || {
                    TunerError::Arguments(format!(
                        "`{t}`: write randint:LO:HI with integers LO < HI"
                    ))
                };
                if parts.len() != 3 {
                    return Err(bad());
                }
                let lo: i64 = parts[1].parse().map_err(|_| bad())?;
                let hi: i64 = parts[2].parse().map_err(|_| bad())?;
                if lo >= hi {
                    return Err(bad());
                }
                Distribution::RandInt { lo, hi }
            }
            other => {
                return Err(TunerError::Arguments(format!(
                    "unknown distribution `{other}` (randn, rand, zeros, ones, randint:LO:HI)"
                )));
            }
        })
    }
}

/// Where an array's bytes come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ArraySource {
    Npy { path: PathBuf, offset: u64 },
    Generate { dist: Distribution, seed: u64 },
}
