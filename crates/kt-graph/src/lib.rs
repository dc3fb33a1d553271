//! Typed state-graph engine (being written).
