//! Logging set-up: `tracing` to stderr, filtered by `KT_LOG` (same syntax as `RUST_LOG`) or by `-v` flags.
//! Every field is written with control characters escaped: a log line may quote an LLM's answer, a provider's
//! error body or a generator's output, none of which may reach the terminal as escape sequences.

use std::fmt::Debug;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{Writer, debug_fn};

/// `-v` raises kt's own crates to debug, `-vv` to trace; `KT_LOG` wins when set.
pub fn init(verbosity: u8) {
    let default = match verbosity {
        0 => "warn",
        1 => {
            "warn,kt=debug,kt_cli=debug,kt_graph=debug,kt_llm=debug,kt_cuda=debug,kt_tuner=debug,kt_sandbox=debug,kt_pipeline=debug,kt_profile=debug,kt_runs=debug,kt_experiments=debug"
        }
        _ => {
            "debug,kt=trace,kt_cli=trace,kt_graph=trace,kt_llm=trace,kt_cuda=trace,kt_tuner=trace,kt_sandbox=trace,kt_pipeline=trace,kt_profile=trace,kt_runs=trace,kt_experiments=trace"
        }
    };
    let filter = EnvFilter::try_from_env("KT_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    // A second init (tests calling main twice) is harmless: keep the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .fmt_fields(escaped_fields())
        .with_writer(std::io::stderr)
        // colour codes only where a person reads them: a pipe or a file gets plain text
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// The default `name=value` fields (the message bare), each value passed through kt-record's escaper.
fn escaped_fields() -> impl for<'w> FormatFields<'w> + Send + Sync + 'static {
    debug_fn(
        |writer: &mut Writer<'_>, field: &tracing::field::Field, value: &dyn Debug| {
            let text = format!("{value:?}");
            let safe = kt_record::terminal_safe(&text);
            if field.name() == "message" {
                write!(writer, "{safe}")
            } else {
                write!(writer, "{}={safe}", field.name())
            }
        },
    )
    .delimited(" ")
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer into a shared buffer, for reading what the subscriber wrote.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_logged_llm_answer_reaches_the_terminal_with_its_escape_sequences_as_text() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(escaped_fields())
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let answer = "\x1b]52;c;Y3VybCBldmls\x07\x1b[2J\rok";
            tracing::warn!(node = "stage1.describe", error = %answer, "structured answer did not parse: {answer}");
        });
        let text = String::from_utf8_lossy(&buffer.0.lock().unwrap_or_else(|e| e.into_inner()))
            .into_owned();
        assert!(
            text.contains("error=\\x1b]52;c;Y3VybCBldmls\\x07"),
            "{text:?}"
        );
        assert!(text.contains("did not parse: \\x1b]52"), "{text:?}");
        assert!(
            !text.contains(['\x1b', '\x07', '\r']),
            "a raw control character reached the log: {text:?}"
        );
    }
}
