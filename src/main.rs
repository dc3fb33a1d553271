//! The `kt` executable. All wiring lives in the `kt-cli` crate; this file only hands over to it.
fn main() -> std::process::ExitCode {
    kt_cli::main()
}
