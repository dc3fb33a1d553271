//! Which protections the generator sandbox gets on this machine (detected once by kt-sandbox), one line each.

use kt_sandbox::{ProtectionLine, Protections, detect_protections};

use super::Check;

pub fn probe() -> Vec<Check> {
    let p = detect_protections();
    let mut checks: Vec<Check> = p.lines().into_iter().map(|line| check(&p, line)).collect();
    checks.push(memory_cgroup(kt_sandbox::memory_cgroup()));
    checks.push(disk_quota(kt_sandbox::disk_quota::probe()));
    checks
}

/// Which cap holds a run's memory: a cgroup of its own per run, or kt's measuring and why there is no cgroup.
fn memory_cgroup(cgroup: Result<&std::path::Path, &str>) -> Check {
    const NAME: &str = "sandbox: memory cgroup";
    match cgroup {
        Ok(base) => Check::ok(
            NAME,
            format!(
                "yes: each run gets a cgroup of its own in {} (memory.max, no swap): the kernel holds the cap",
                base.display()
            ),
        ),
        // measuring still caps the run (the "run memory" line): no fault, but say why and what it misses
        Err(why) => Check::ok(
            NAME,
            format!("no: {why}; runs' memory is measured instead (see sandbox: run memory)"),
        ),
    }
}

/// The work directory's disk quota, tried with a program that writes past it.
fn disk_quota(probed: Result<String, String>) -> Check {
    const NAME: &str = "sandbox: disk quota";
    match probed {
        Ok(what) => Check::ok(
            NAME,
            format!(
                "yes: {what} (a generator's quota: {} or what its arrays need, `disk_quota_mb` in kt.toml's \
                 [sandbox]; checked every {} ms, so a program may overshoot by what it writes in that time)",
                kt_sandbox::disk_quota::human(kt_sandbox::DEFAULT_DISK_QUOTA),
                kt_sandbox::disk_quota::CHECK_EVERY.as_millis()
            ),
        ),
        Err(why) => Check::missing(
            NAME,
            format!("does not hold here: {why}"),
            "report this as a kt bug with `kt doctor --json`; meanwhile only the per-file size limit bounds \
             what a generator writes"
                .to_string(),
        ),
    }
}

fn check(p: &Protections, line: ProtectionLine) -> Check {
    let name = match line.name {
        "network namespace" => "sandbox: network namespace",
        "private /tmp" => "sandbox: private /tmp",
        "PID and IPC namespaces" => "sandbox: PID and IPC namespaces",
        "private home" => "sandbox: private home",
        "system-call filter" => "sandbox: system-call filter",
        "uid switch" => "sandbox: uid switch",
        "user namespace" => "sandbox: user namespace",
        "process limit" => "sandbox: process limit",
        "run memory" => "sandbox: run memory",
        _ => "sandbox: rlimits",
    };
    // Without root no uid can be switched to: that is how Linux works, not something to fix on this machine.
    let expected_off = (line.name == "uid switch" && !p.running_as_root) || line.not_needed;
    if line.active || expected_off {
        let detail = if line.active {
            format!("yes: {}", line.detail)
        } else {
            format!("no: {}", line.detail)
        };
        Check::ok(name, detail)
    } else {
        let (what, fix) = line
            .detail
            .split_once(": ")
            .unwrap_or(("unavailable", line.detail.as_str()));
        Check::missing(name, what.to_string(), fix.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protection_is_its_own_line_and_a_missing_namespace_says_how_to_opt_in() {
        let bare = Protections::default();
        let checks: Vec<Check> = bare.lines().into_iter().map(|l| check(&bare, l)).collect();
        let names: Vec<&str> = checks.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "sandbox: network namespace",
                "sandbox: private /tmp",
                "sandbox: PID and IPC namespaces",
                "sandbox: private home",
                "sandbox: system-call filter",
                "sandbox: uid switch",
                "sandbox: user namespace",
                "sandbox: process limit",
                "sandbox: run memory",
                "sandbox: rlimits"
            ]
        );
        let net = &checks[0];
        assert_eq!(net.status, super::super::Status::Missing);
        assert!(
            net.fix
                .as_deref()
                .unwrap_or("")
                .contains("--allow-unsandboxed"),
            "{net:?}"
        );
        assert_eq!(
            checks[5].status,
            super::super::Status::Ok,
            "no uid switch without root is no fault"
        );
        assert_eq!(checks[9].status, super::super::Status::Ok);
        let memory = &checks[8];
        assert_eq!(memory.status, super::super::Status::Missing);
        assert!(
            memory
                .fix
                .as_deref()
                .unwrap_or("")
                .contains("address-space limit"),
            "the fallback says what it cannot cap: {memory:?}"
        );
    }

    #[test]
    fn the_memory_cgroup_line_says_where_or_why_not() {
        let yes = memory_cgroup(Ok(std::path::Path::new("/sys/fs/cgroup/system.slice")));
        assert!(
            yes.detail.contains("/sys/fs/cgroup/system.slice"),
            "{yes:?}"
        );
        let no = memory_cgroup(Err(
            "cgroup v2 at /sys/fs/cgroup is mounted read-only (a container?)",
        ));
        assert_eq!(no.status, super::super::Status::Ok);
        assert!(
            no.detail.starts_with("no: cgroup v2") && no.detail.contains("measured instead"),
            "{no:?}"
        );
    }

    #[test]
    fn the_disk_quota_line_says_whether_it_held() {
        let held = disk_quota(Ok("stopped at 1.5 MiB".into()));
        assert_eq!(held.status, super::super::Status::Ok);
        assert!(
            held.detail.contains("disk_quota_mb") && held.detail.contains("8.0 GiB"),
            "{held:?}"
        );
        let failed = disk_quota(Err("it finished".into()));
        assert_eq!(failed.status, super::super::Status::Missing);
        assert!(
            failed.detail.contains("does not hold here: it finished"),
            "{failed:?}"
        );
    }
}
