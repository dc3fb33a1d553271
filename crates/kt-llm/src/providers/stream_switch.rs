//! Whether a provider still streams its requests. Some OpenAI-compatible servers ignore `"stream": true` and
//! answer with one JSON body: the transport reads that body as the answer, and the provider then asks for
//! whole answers for the rest of its life (the run), with one warning, instead of relying on the detection.

use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub(crate) struct StreamSwitch(AtomicBool);

impl StreamSwitch {
    pub(crate) fn new(stream: bool) -> Self {
        Self(AtomicBool::new(stream))
    }

    pub(crate) fn on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Stops streaming; warns the first time only.
    pub(crate) fn turn_off(&self, provider: &str) {
        if self.0.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                "the {provider} server does not stream its answers: asking for whole answers from now on \
                 (set `stream = false` in kt.toml's [llm] section, or pass --no-stream, to skip this)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_off_it_stays_off() {
        let s = StreamSwitch::new(true);
        assert!(s.on());
        s.turn_off("openai");
        assert!(!s.on());
        s.turn_off("openai");
        assert!(!s.on());
        assert!(!StreamSwitch::new(false).on());
    }
}
