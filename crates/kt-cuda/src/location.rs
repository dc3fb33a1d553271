//! Where something stands in the user's original source: a [`Location`] (line and column) and a [`Span`]
//! between two. Every message of the crate points with these, so they sit under everything else.

use serde::{Deserialize, Serialize};

/// A position in the user's original source (1-based line and column, column counted in bytes), so that
/// messages point at what the user wrote even when kt substituted macros before parsing.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A start..end range in the user's original source (end is exclusive).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub start: Location,
    pub end: Location,
}

impl std::fmt::Display for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::{Location, Span};

    #[test]
    fn a_span_shows_its_two_ends_as_line_and_column() {
        let start = Location { line: 3, column: 7 };
        let end = Location { line: 4, column: 1 };
        assert_eq!(start.to_string(), "3:7");
        assert_eq!(Span { start, end }.to_string(), "3:7-4:1");
    }
}
