//! What an array's source was when it was read: a file's length and modification time, or a generated
//! source (its distribution and seed say everything). A test sent to the worker again is compared by these
//! as well as by its description, so a file rewritten in place (expected outputs written after a baseline, a
//! Python session writing new arrays to the same paths) is read again rather than taken from the GPU.

use std::time::SystemTime;

use crate::model::args::{ArraySource, KernelTest};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stamp {
    File {
        len: u64,
        modified: Option<SystemTime>,
    },
    Generated,
}

/// The stamp of `source` now; None when its file cannot be read (then nothing read from it is kept).
pub fn stamp(source: &ArraySource) -> Option<Stamp> {
    match source {
        ArraySource::Npy { path, .. } => {
            let m = std::fs::metadata(path).ok()?;
            Some(Stamp::File {
                len: m.len(),
                modified: m.modified().ok(),
            })
        }
        ArraySource::Generate { .. } => Some(Stamp::Generated),
    }
}

/// The stamps of every file a test's arrays are read from (inputs, then expected values), in order.
pub fn of_test(test: &KernelTest) -> Vec<Option<Stamp>> {
    test.arrays()
        .flat_map(|a| [Some(&a.source), a.expected.as_ref()])
        .flatten()
        .chain(test.constants.iter().map(|c| &c.source))
        .map(stamp)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_rewritten_or_removed_changes_its_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.npy");
        std::fs::write(&f, [0u8; 144]).unwrap();
        let src = ArraySource::Npy {
            path: f.clone(),
            offset: 128,
        };
        let before = stamp(&src);
        assert!(before.is_some());
        assert_eq!(stamp(&src), before);
        std::fs::write(&f, [0u8; 160]).unwrap();
        assert_ne!(stamp(&src), before);
        std::fs::remove_file(&f).unwrap();
        assert_eq!(stamp(&src), None);
    }
}
