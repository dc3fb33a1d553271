//! `kt studio`: serve the local web studio over a runs directory until Ctrl-C. Logic lives in kt-studio.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use kt_studio::StudioConfig;

#[derive(Debug, Args)]
pub struct StudioArgs {
    /// Where runs live (default: $KT_RUNS_DIR, else ./kt-runs).
    #[arg(long)]
    pub runs_dir: Option<PathBuf>,
    /// The port to listen on (0: any free port; the URL printed says which).
    #[arg(long, default_value_t = 7860)]
    pub port: u16,
    /// The address to listen on. Anything but a loopback address also needs --allow-remote and --token.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// Serve on a non-loopback --bind address (every request then needs --token).
    #[arg(long)]
    pub allow_remote: bool,
    /// The access token for a non-loopback address (at least 16 characters; also read from $KT_STUDIO_TOKEN).
    #[arg(long, env = "KT_STUDIO_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Look only: forking, replaying, resuming, breakpoints and answers are refused.
    #[arg(long)]
    pub read_only: bool,
}

pub fn run(a: StudioArgs) -> anyhow::Result<ExitCode> {
    let config = StudioConfig {
        runs_dir: kt_runs::runs_base(a.runs_dir.as_deref()),
        addr: SocketAddr::new(a.bind, a.port),
        allow_remote: a.allow_remote,
        access_token: a.token,
        read_only: a.read_only,
        kt: std::env::current_exe().context("finding the kt executable (for `kt resume`)")?,
    };
    let runs_dir = config.runs_dir.clone();
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(kt_studio::serve(config, |_, url| {
        // The first line of stdout is the URL (tests and scripts read it when --port 0).
        println!("kt studio: {url}");
        eprintln!(
            "serving runs from {}{}; Ctrl-C stops",
            runs_dir.display(),
            if a.read_only { " (read-only)" } else { "" }
        );
    }))?;
    Ok(ExitCode::SUCCESS)
}
