//! Test support: a loopback HTTP server that plays scripted faults, and the behaviour tests that use it.

mod faults;
mod modes;
mod non_streaming;
mod oversize;
pub(crate) mod server;
