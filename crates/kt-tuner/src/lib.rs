//! Embedded auto-tuner (being written).
