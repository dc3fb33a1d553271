//! How kt starts itself again for its hidden subcommands: the GPU worker (`__tuner-worker`) and the program
//! Nsight Compute watches (`__profile-launch`). In the `kt` binary that is the running executable; a host
//! that embeds kt (kt's Python module, where the running executable is the Python interpreter) sets the
//! command that runs kt's command line instead, once, before it tunes.

use std::path::PathBuf;
use std::sync::RwLock;

use crate::error::TunerError;

/// A program and the arguments that make it kt's command line; a subcommand's arguments follow them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

static HOST: RwLock<Option<SelfCommand>> = RwLock::new(None);

/// Makes `command` how this process starts kt from now on (a host embedding kt calls it).
pub fn set_host(command: SelfCommand) {
    *HOST.write().unwrap_or_else(|p| p.into_inner()) = Some(command);
}

/// The command that runs kt's command line: the host's, else the running executable.
pub fn self_command() -> Result<SelfCommand, TunerError> {
    let host = HOST.read().unwrap_or_else(|p| p.into_inner()).clone();
    host.map_or_else(running_executable, Ok)
}

fn running_executable() -> Result<SelfCommand, TunerError> {
    let program = std::env::current_exe().map_err(|e| {
        TunerError::Worker(format!(
            "cannot find the running executable, which kt starts again for its GPU worker and profiled launches: {e}"
        ))
    })?;
    Ok(SelfCommand {
        program,
        args: Vec::new(),
    })
}

/// `kt SUBCOMMAND`: the program and its arguments up to and including `subcommand`.
pub fn subcommand(subcommand: &str) -> Result<(PathBuf, Vec<String>), TunerError> {
    Ok(self_command()?.with(subcommand))
}

impl SelfCommand {
    fn with(self, subcommand: &str) -> (PathBuf, Vec<String>) {
        let mut args = self.args;
        args.push(subcommand.to_string());
        (self.program, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The host command is process-wide: these tests read it and never set it, so that other tests of this
    // binary that start a worker are not affected.
    #[test]
    fn without_a_host_kt_is_the_running_executable() {
        let (program, args) = subcommand("__tuner-worker").unwrap();
        assert_eq!(program, std::env::current_exe().unwrap());
        assert_eq!(args, ["__tuner-worker"]);
    }

    #[test]
    fn a_hosts_command_comes_before_the_subcommand() {
        let host = SelfCommand {
            program: "/usr/bin/python3".into(),
            args: vec!["-c".into(), "from kt._main import main; main()".into()],
        };
        let (program, args) = host.with("__profile-launch");
        assert_eq!(program, PathBuf::from("/usr/bin/python3"));
        assert_eq!(
            args,
            [
                "-c",
                "from kt._main import main; main()",
                "__profile-launch"
            ]
        );
    }
}
