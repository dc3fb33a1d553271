//! Logging set-up: `tracing` to stderr, filtered by `KT_LOG` (same syntax as `RUST_LOG`) or by `-v` flags.

use tracing_subscriber::EnvFilter;

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
        .with_writer(std::io::stderr)
        // colour codes only where a person reads them: a pipe or a file gets plain text
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}
