//! The parameters that set a launch's block, x first: `block_size_x`, `block_size_y`, `block_size_z` unless
//! the caller names others (Kernel Tuner's `block_size_names=["bx", "by"]`). The names given replace the
//! defaults from x on; dimensions not named keep theirs, as Kernel Tuner pads the list. The launch reads the
//! named parameters, the kernel sees them as `#define`s under their own names (at their defaults, 256, 1
//! and 1, when not tuned), and the grid is divided by them unless a grid divisor says otherwise.

use serde::{Deserialize, Serialize};

use crate::error::TunerError;

/// Kernel Tuner's default names of the parameters that set the launch's block: their values must be integers.
pub const BLOCK_SIZE_NAMES: [&str; 3] = ["block_size_x", "block_size_y", "block_size_z"];

/// Block-size parameter names per dimension, x first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockNames(pub [String; 3]);

impl Default for BlockNames {
    fn default() -> Self {
        BlockNames(BLOCK_SIZE_NAMES.map(String::from))
    }
}

impl BlockNames {
    /// Up to three names, x first; the dimensions not named keep their default names. Refuses more than
    /// three names, a name that is not a C identifier (the kernel sees it as a `#define`) and a name given
    /// twice.
    pub fn new(names: &[String]) -> Result<Self, TunerError> {
        if names.len() > 3 {
            return Err(TunerError::Arguments(format!(
                "block_size_names has {} names; give at most three (x, y, z)",
                names.len()
            )));
        }
        let mut out = BlockNames::default();
        for (i, name) in names.iter().enumerate() {
            if !is_identifier(name) {
                return Err(TunerError::Arguments(format!(
                    "block size name `{name}` is not a C identifier; the kernel sees it as a #define, so use letters, digits and _"
                )));
            }
            out.0[i] = name.clone();
        }
        for (i, name) in out.0.iter().enumerate() {
            if out.0[..i].contains(name) {
                return Err(TunerError::Arguments(format!(
                    "block size name `{name}` is given for two dimensions; name each dimension's parameter once"
                )));
            }
        }
        Ok(out)
    }

    pub fn is_default(&self) -> bool {
        *self == BlockNames::default()
    }

    /// The names, x first.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|n| n == name)
    }

    /// The dimension's block size when its parameter is not tuned: Kernel Tuner's 256, 1, 1.
    pub fn default_size(dim: usize) -> i64 {
        if dim == 0 { 256 } else { 1 }
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_given_replace_the_defaults_from_x_on() {
        let b = BlockNames::new(&names(&["bx", "by"])).unwrap();
        assert_eq!(b.iter().collect::<Vec<_>>(), ["bx", "by", "block_size_z"]);
        assert!(!b.is_default());
        assert!(BlockNames::new(&[]).unwrap().is_default());
        assert!(
            BlockNames::new(&names(&["block_size_x"]))
                .unwrap()
                .is_default()
        );
    }

    #[test]
    fn bad_names_are_refused_with_what_to_do() {
        let e = BlockNames::new(&names(&["a", "b", "c", "d"])).unwrap_err();
        assert!(e.to_string().contains("at most three"), "{e}");
        let e = BlockNames::new(&names(&["2x"])).unwrap_err();
        assert!(e.to_string().contains("not a C identifier"), "{e}");
        let e = BlockNames::new(&names(&["bx", "bx"])).unwrap_err();
        assert!(e.to_string().contains("two dimensions"), "{e}");
        // a padded default clashing with a name given for another dimension
        let e = BlockNames::new(&names(&["block_size_y"])).unwrap_err();
        assert!(e.to_string().contains("`block_size_y`"), "{e}");
    }

    #[test]
    fn untuned_sizes_are_kernel_tuners_defaults() {
        assert_eq!(
            (0..3).map(BlockNames::default_size).collect::<Vec<_>>(),
            [256, 1, 1]
        );
    }
}
