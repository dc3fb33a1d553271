//! Support for the Kernel Tuner interop tests: a fake device that kt's search strategies tune, running an
//! export's script with Kernel Tuner, and the recorded GPU exports.

mod fake_device;
mod python;

pub use fake_device::*;
pub use python::*;
