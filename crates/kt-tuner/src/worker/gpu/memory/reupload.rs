//! What a second upload of a test may keep on the GPU. A test is sent again when only what the parent checks
//! with changed: expected outputs written after the baseline, tolerances for outputs that are sums. Reading
//! and copying its inputs again (hundreds of megabytes for a matrix product) would cost a tenth of a second
//! per tuning; an input whose source is the same, and whose file has not changed since it was read, keeps its
//! copy on the GPU.

use crate::model::args::ArrayArg;

pub(super) use crate::compile::source_stamp::{Stamp, stamp};

/// Whether an array uploaded as `old` (its source then `old_stamp`) holds the input `new` asks for: the same
/// name, type, size and source, unchanged since. What it is expected to hold afterwards may differ.
pub(super) fn same_input(
    old: &ArrayArg,
    old_stamp: Option<&Stamp>,
    new: &ArrayArg,
    new_stamp: Option<&Stamp>,
) -> bool {
    let (Some(a), Some(b)) = (old_stamp, new_stamp) else {
        return false;
    };
    a == b
        && old.name == new.name
        && old.dtype == new.dtype
        && old.lanes == new.lanes
        && old.elements == new.elements
        && old.is_output == new.is_output
        && old.source == new.source
}

/// Whether the expected values uploaded for `old` (their source then `old_stamp`) are those `new` asks for.
pub(super) fn same_expected(
    old: &ArrayArg,
    old_stamp: Option<&Stamp>,
    new: &ArrayArg,
    new_stamp: Option<&Stamp>,
) -> bool {
    matches!((old_stamp, new_stamp), (Some(a), Some(b)) if a == b)
        && old.expected.is_some()
        && old.expected == new.expected
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::args::{ArraySource, Distribution};
    use kt_record::DType;

    fn array(source: ArraySource, expected: Option<ArraySource>) -> ArrayArg {
        ArrayArg {
            name: "a".into(),
            dtype: DType::Float32,
            lanes: 1,
            elements: 4,
            source,
            is_output: false,
            expected,
        }
    }

    fn npy(path: &std::path::Path) -> ArraySource {
        ArraySource::Npy {
            path: path.to_path_buf(),
            offset: 128,
        }
    }

    #[test]
    fn an_unchanged_file_is_kept_whatever_is_expected_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.npy");
        std::fs::write(&f, [0u8; 144]).unwrap();
        let e = dir.path().join("e.npy");
        std::fs::write(&e, [1u8; 144]).unwrap();
        let old = array(npy(&f), None);
        let new = array(npy(&f), Some(npy(&e)));
        let s = stamp(&old.source);
        assert!(same_input(
            &old,
            s.as_ref(),
            &new,
            stamp(&new.source).as_ref()
        ));
        // an expected file that appeared is uploaded, not kept
        assert!(!same_expected(&old, None, &new, stamp(&npy(&e)).as_ref()));
        let es = stamp(&npy(&e));
        assert!(same_expected(&new, es.as_ref(), &new, es.as_ref()));
    }

    #[test]
    fn a_rewritten_file_a_missing_file_or_another_array_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.npy");
        std::fs::write(&f, [0u8; 144]).unwrap();
        let old = array(npy(&f), None);
        let before = stamp(&old.source);
        std::fs::write(&f, [0u8; 160]).unwrap();
        assert!(!same_input(
            &old,
            before.as_ref(),
            &old,
            stamp(&old.source).as_ref()
        ));
        std::fs::remove_file(&f).unwrap();
        assert_eq!(stamp(&old.source), None);
        assert!(!same_input(&old, before.as_ref(), &old, None));

        let g = |seed| ArraySource::Generate {
            dist: Distribution::Rand,
            seed,
        };
        let (a, b) = (array(g(1), None), array(g(2), None));
        let s = Some(Stamp::Generated);
        assert!(same_input(&a, s.as_ref(), &a, s.as_ref()));
        assert!(!same_input(&a, s.as_ref(), &b, s.as_ref()));
        let longer = ArrayArg {
            elements: 8,
            ..a.clone()
        };
        assert!(!same_input(&a, s.as_ref(), &longer, s.as_ref()));
    }
}
