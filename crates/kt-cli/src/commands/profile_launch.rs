//! `kt __profile-launch` (hidden): the program Nsight Compute watches when Stage 3 profiles a kernel. It
//! launches one configuration of one kernel a few times on one test's inputs and exits; it is not meant to
//! be run by hand (Stage 3 builds its command line with `kt_pipeline::ProfileLaunch::args`). With
//! `--standby` it starts first and reads what to launch on its standard input (one JSON line), so that
//! ncu's start-up overlaps the run's tuning.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use kt_pipeline::stage3::ProfileLaunch;

#[derive(Debug, Args)]
pub struct ProfileLaunchArgs {
    /// Start now, then read the launch (all of the flags below as one JSON object) on standard input.
    #[arg(long, conflicts_with_all = ["kernel_file", "kernel", "params", "geometry", "test"])]
    pub standby: bool,
    /// The kernel's device code.
    #[arg(long, required_unless_present = "standby")]
    pub kernel_file: Option<PathBuf>,
    /// The kernel's function name.
    #[arg(long, required_unless_present = "standby")]
    pub kernel: Option<String>,
    /// The configuration, as a JSON object of integers (`{"block_size_x": 32}`).
    #[arg(long, required_unless_present = "standby")]
    pub params: Option<String>,
    /// Problem size, grid divisors and dynamic shared memory, as JSON (kt-tuner's geometry).
    #[arg(long, required_unless_present = "standby")]
    pub geometry: Option<String>,
    /// One test directory (`tests/<id>`).
    #[arg(long, required_unless_present = "standby")]
    pub test: Option<PathBuf>,
    /// A directory searched for the kernel's headers (repeatable).
    #[arg(long)]
    pub include: Vec<PathBuf>,
    /// The tuner's cache directory (compiled modules).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
}

impl ProfileLaunchArgs {
    fn launch(self) -> anyhow::Result<ProfileLaunch> {
        let missing = |flag: &str| anyhow::anyhow!("{flag} is required without --standby");
        let (params, geometry) = ProfileLaunch::parse_json(
            &self.params.ok_or_else(|| missing("--params"))?,
            &self.geometry.ok_or_else(|| missing("--geometry"))?,
        )?;
        Ok(ProfileLaunch {
            kernel_file: self.kernel_file.ok_or_else(|| missing("--kernel-file"))?,
            kernel: self.kernel.ok_or_else(|| missing("--kernel"))?,
            params,
            geometry,
            test: self.test.ok_or_else(|| missing("--test"))?,
            include: self.include,
            cache_dir: self.cache_dir,
        })
    }
}

pub fn run(args: ProfileLaunchArgs) -> anyhow::Result<ExitCode> {
    if args.standby {
        kt_pipeline::stage3::run_standby(args.cache_dir, &mut std::io::stdin().lock())?;
    } else {
        args.launch()?.run()?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Sub {
        #[command(name = "__profile-launch")]
        ProfileLaunch(ProfileLaunchArgs),
    }

    #[test]
    fn the_command_line_stage_3_builds_parses_back_to_the_same_launch() {
        let mut geometry = kt_tuner::Geometry::new(vec!["n".into()]);
        geometry.shared_mem = Some("block_size_x*4".into());
        let launch = ProfileLaunch {
            kernel_file: "/run/tuning/profiles/k.cu".into(),
            kernel: "saxpy".into(),
            params: [("block_size_x".to_string(), 128)].into(),
            geometry,
            test: "/run/tests/t1".into(),
            include: vec!["/inc".into()],
            cache_dir: Some("/run/tuning".into()),
        };
        let mut argv: Vec<std::ffi::OsString> = vec!["kt".into()];
        argv.extend(launch.args());
        let Sub::ProfileLaunch(args) = Wrapper::try_parse_from(argv).unwrap().command;
        assert_eq!(args.launch().unwrap(), launch);
    }

    #[test]
    fn a_standby_needs_only_the_cache_and_takes_no_launch_flags() {
        let Sub::ProfileLaunch(args) =
            Wrapper::try_parse_from(["kt", "__profile-launch", "--standby", "--cache-dir", "/c"])
                .unwrap()
                .command;
        assert!(args.standby && args.kernel.is_none());
        let both = ["kt", "__profile-launch", "--standby", "--kernel", "k"];
        assert!(Wrapper::try_parse_from(both).is_err());
        assert!(Wrapper::try_parse_from(["kt", "__profile-launch", "--kernel", "k"]).is_err());
    }
}
