//! Which protections the generator sandbox gets on this machine (detected once by kt-sandbox), one line each.

use kt_sandbox::{ProtectionLine, Protections, detect_protections};

use super::Check;

pub fn probe() -> Vec<Check> {
    let p = detect_protections();
    p.lines().into_iter().map(|line| check(&p, line)).collect()
}

fn check(p: &Protections, line: ProtectionLine) -> Check {
    let name = match line.name {
        "network namespace" => "sandbox: network namespace",
        "private /tmp" => "sandbox: private /tmp",
        "PID and IPC namespaces" => "sandbox: PID and IPC namespaces",
        "uid switch" => "sandbox: uid switch",
        "user namespace" => "sandbox: user namespace",
        "process limit" => "sandbox: process limit",
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
                "sandbox: uid switch",
                "sandbox: user namespace",
                "sandbox: process limit",
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
            checks[3].status,
            super::super::Status::Ok,
            "no uid switch without root is no fault"
        );
        assert_eq!(checks[6].status, super::super::Status::Ok);
    }
}
