//! Where a page's time goes: each part of building it is logged at debug level with its wall time
//! (`KT_LOG=kt_studio=debug kt studio`), so a slow first load can be taken apart without a profiler.

use std::time::Instant;

/// Runs `f` and logs how long `what` took (for `run` when given, a run id).
pub fn timed<T>(what: &str, run: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    tracing::debug!(
        run,
        ms = format_args!("{:.1}", start.elapsed().as_secs_f64() * 1e3),
        "{what}"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_comes_back_unchanged() {
        assert_eq!(timed("adding", "r1", || 2 + 2), 4);
        let v: Result<u8, String> = timed("failing", "r1", || Err("no".into()));
        assert_eq!(v, Err("no".to_string()));
    }
}
