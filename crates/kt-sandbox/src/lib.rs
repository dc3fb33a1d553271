//! Running untrusted programs (being written).
