//! Which protections the generator sandbox gets on this machine (detected once by kt-sandbox).

use kt_sandbox::Protections;

use super::Check;

pub fn probe() -> Check {
    let p = Protections::detect();
    if p.network_namespace {
        Check::ok("sandbox", p.summary())
    } else {
        Check::missing(
            "sandbox",
            p.summary(),
            "generators would run with network access: run kt as root or enable unprivileged user namespaces \
             (sysctl kernel.unprivileged_userns_clone=1 / kernel.apparmor_restrict_unprivileged_userns=0)",
        )
    }
}
