//! The generator sandbox of `kt transform`, `kt testgen` and `kt resume`: safe by default (no network namespace,
//! no generated program runs), unless the user opts in with `--allow-unsandboxed` or `[sandbox]
//! allow_unsandboxed = true` in the configuration file (kt.toml, $KT_CONFIG or ~/.config/kt/config.toml). The same
//! section's `disk_quota_mb` sets the generators' work-directory quota.

use kt_llm::LlmConfig;
use kt_sandbox::{Policy, Sandbox};

/// The sandbox generated programs run in, checked before anything is run: fails with a message that says why
/// and how to opt in when this machine cannot isolate them from the network and the user did not opt in.
pub(crate) fn generator_sandbox(allow_flag: bool) -> anyhow::Result<Sandbox> {
    let cwd = std::env::current_dir()?;
    let settings = match LlmConfig::find_file(&cwd)? {
        Some(path) => kt_sandbox::settings_in(&path)?,
        None => kt_sandbox::SandboxSettings::default(),
    };
    let sandbox = Sandbox::new(
        Policy::for_generator()
            .allow_unsandboxed(allow_flag || settings.allow_unsandboxed)
            .with_disk_quota_mb(settings.disk_quota_mb),
    );
    sandbox.check_ready()?;
    Ok(sandbox)
}

/// Says once, before a run starts, when generated programs will run with the host's network.
pub(crate) fn warn_if_unsandboxed(sandbox: &Sandbox) {
    let active = sandbox.protections();
    if !active.network_namespace {
        eprintln!(
            "warning: generated programs will run WITH network access (no network namespace here; you opted in); \
             sandbox: {}",
            active.summary()
        );
    }
}
