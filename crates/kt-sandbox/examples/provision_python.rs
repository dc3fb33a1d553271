//! Prints the interpreter of kt's own Python environment (`$XDG_DATA_HOME/kt/venv`, `~/.local/share/kt/venv`),
//! creating it with the pinned numpy first when it does not work yet: the same code `kt transform` provisions with.
//! scripts/test.sh runs it so that the tests use the interpreter a user of kt gets.

use std::process::ExitCode;

fn main() -> ExitCode {
    match kt_sandbox::PythonRuntime::provision_managed() {
        Ok(runtime) => {
            println!("{}", runtime.interpreter.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
