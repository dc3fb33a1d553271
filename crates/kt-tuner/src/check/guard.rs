//! Guard regions around every array a kernel is handed. A write one element past the end of an output
//! (`if (i <= n)`) lands inside cudaMalloc's rounding and faults nowhere: the output compares equal and
//! the kernel passes, yet in a real program it overwrites the neighbouring buffer. So each working copy
//! is allocated larger, with [`GUARD_BYTES`] of a known pattern before it and at least as many after its
//! last byte, and the kernel gets the interior pointer (still 256-byte aligned, as cudaMalloc's own
//! pointers are). After every verifying launch the guard bytes are read back (a few hundred bytes per
//! array) and any byte that lost the pattern is a [`GuardBreach`]: a verdict of its own, never a pass.
//!
//! This module is the host-side rule (layout, pattern, what a breach says); the worker's GPU side
//! allocates, fills and reads the guards.

use serde::{Deserialize, Serialize};

/// Bytes of guard before an array, and the least after it. cudaMalloc aligns to 256 bytes: an interior
/// pointer 256 bytes in keeps every alignment a kernel may assume (float4, double2, 128-byte lines).
pub const GUARD_BYTES: u64 = 256;

/// The byte every guard holds. Not 0 and not 0xFF (what a kernel writes most), and no float's or int's
/// common small values.
pub const GUARD_PATTERN: u8 = 0xA7;

/// Where an array and its guards sit inside one allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardedLayout {
    /// The array's own bytes.
    pub bytes: u64,
}

impl GuardedLayout {
    pub fn new(bytes: u64) -> Self {
        GuardedLayout { bytes }
    }

    /// Offset of the array inside the allocation.
    pub fn offset(&self) -> u64 {
        GUARD_BYTES
    }

    /// Bytes of guard after the array: up to the next 256-byte boundary plus a whole guard, so that even
    /// a write just past an unaligned end lands in it.
    pub fn after_bytes(&self) -> u64 {
        self.bytes.div_ceil(GUARD_BYTES) * GUARD_BYTES - self.bytes + GUARD_BYTES
    }

    /// Bytes to allocate: guard, array, guard.
    pub fn total(&self) -> u64 {
        GUARD_BYTES + self.bytes + self.after_bytes()
    }

    /// Offset of the guard after the array inside the allocation.
    pub fn after_offset(&self) -> u64 {
        GUARD_BYTES + self.bytes
    }
}

/// Which side of an array a guard is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Before,
    After,
}

/// Guard bytes an array's launch overwrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardBreach {
    pub array: String,
    pub side: Side,
    /// Bytes from the first to the last one changed (the extent of the stray write).
    pub span: u64,
    /// Distance of the changed byte nearest the array from the array's edge (0: right next to it).
    pub distance: u64,
}

impl GuardBreach {
    /// "wrote 4 bytes past the end of `c`" / "wrote 8 bytes before the start of `a` (ending 16 bytes before
    /// it)".
    pub fn describe(&self) -> String {
        let (what, edge) = match self.side {
            Side::After => ("past the end of", "after"),
            Side::Before => ("before the start of", "before"),
        };
        let mut s = format!("wrote {} bytes {what} `{}`", self.span, self.array);
        if self.distance > 0 {
            s.push_str(&format!(" ({} bytes {edge} it)", self.distance));
        }
        s
    }
}

/// The breach, if any, in the guard bytes read back from one side of `array`. `guard` holds the bytes in
/// address order: for `Before`, its last byte touches the array; for `After`, its first.
pub fn check(array: &str, side: Side, guard: &[u8]) -> Option<GuardBreach> {
    let changed: Vec<usize> = guard
        .iter()
        .enumerate()
        .filter(|(_, b)| **b != GUARD_PATTERN)
        .map(|(i, _)| i)
        .collect();
    let (&first, &last) = (changed.first()?, changed.last()?);
    let span = (last - first + 1) as u64;
    let distance = match side {
        Side::After => first as u64,
        Side::Before => (guard.len() - 1 - last) as u64,
    };
    Some(GuardBreach {
        array: array.to_string(),
        side,
        span,
        distance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_keeps_256_byte_alignment_and_a_whole_guard_after_any_end() {
        for bytes in [0u64, 1, 4, 255, 256, 257, 4000, 1 << 20] {
            let l = GuardedLayout::new(bytes);
            assert_eq!(l.offset() % 256, 0);
            assert!(l.after_bytes() >= GUARD_BYTES, "{bytes}");
            assert_eq!(l.total() % 256, 0, "{bytes}");
            assert_eq!(l.after_offset(), l.offset() + bytes);
            assert_eq!(l.total(), l.after_offset() + l.after_bytes());
        }
        // 4000 bytes end 96 bytes short of a boundary: 96 + 256 guard bytes after them
        assert_eq!(GuardedLayout::new(4000).after_bytes(), 96 + 256);
    }

    #[test]
    fn an_untouched_guard_is_no_breach() {
        assert_eq!(check("c", Side::After, &[GUARD_PATTERN; 300]), None);
    }

    #[test]
    fn one_float_past_the_end_is_four_bytes_past_the_end() {
        let mut g = vec![GUARD_PATTERN; 352];
        g[..4].copy_from_slice(&1.5f32.to_le_bytes());
        let b = check("c", Side::After, &g).unwrap();
        assert_eq!((b.span, b.distance), (4, 0));
        assert_eq!(b.describe(), "wrote 4 bytes past the end of `c`");
    }

    #[test]
    fn a_write_before_the_start_is_measured_from_the_start() {
        let mut g = vec![GUARD_PATTERN; 256];
        // a float at index -4: bytes 16..13 before the array
        g[240..244].copy_from_slice(&0f32.to_le_bytes());
        let b = check("a", Side::Before, &g).unwrap();
        assert_eq!((b.span, b.distance), (4, 12));
        assert_eq!(
            b.describe(),
            "wrote 4 bytes before the start of `a` (12 bytes before it)"
        );
    }

    #[test]
    fn a_value_sharing_bytes_with_the_pattern_still_counts_its_whole_span() {
        let mut g = vec![GUARD_PATTERN; 256];
        g[8] = 0;
        g[11] = 0; // bytes 9 and 10 happened to match the pattern
        let b = check("out", Side::After, &g).unwrap();
        assert_eq!((b.span, b.distance), (4, 8));
    }
}
