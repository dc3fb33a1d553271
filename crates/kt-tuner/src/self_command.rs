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
    if let Some(host) = HOST.read().unwrap_or_else(|p| p.into_inner()).clone() {
        return Ok(host);
    }
    let program = std::env::current_exe().map_err(|e| {
        TunerError::Worker(format!(
            "cannot find the running executable to start kt's worker: {e}"
        ))
    })?;
    Ok(SelfCommand {
        program,
        args: Vec::new(),
    })
}

/// `kt SUBCOMMAND`: the program and its arguments up to and including `subcommand`.
pub fn subcommand(subcommand: &str) -> Result<(PathBuf, Vec<String>), TunerError> {
    let SelfCommand { program, mut args } = self_command()?;
    args.push(subcommand.to_string());
    Ok((program, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_executable_unless_a_host_says_otherwise() {
        let (program, args) = subcommand("__tuner-worker").unwrap();
        assert_eq!(program, std::env::current_exe().unwrap());
        assert_eq!(args, ["__tuner-worker"]);
        set_host(SelfCommand {
            program: "/usr/bin/python3".into(),
            args: vec!["-c".into(), "import kt._main".into()],
        });
        let (program, args) = subcommand("__profile-launch").unwrap();
        assert_eq!(program, PathBuf::from("/usr/bin/python3"));
        assert_eq!(args, ["-c", "import kt._main", "__profile-launch"]);
        *HOST.write().unwrap() = None;
    }
}
