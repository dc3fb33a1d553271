//! The environment a sandboxed program sees: an allow-list of kt's variables minus anything that looks like a
//! credential or a proxy, plus explicit additions.
//!
//! Why scrub even allow-listed names: a pattern like `KT_*` or `PYTHON*` could match `KT_OPENAI_API_KEY`; an API key
//! handed to LLM-written code is one `print` away from a transcript. Proxies are dropped so that a program in a
//! namespace without network does not learn where the proxy is, and one without a namespace cannot use it.

use std::ffi::OsString;
use std::path::Path;

use crate::policy::EnvPolicy;

/// Substrings (upper-cased) that mark a variable as a credential.
const SECRET_MARKERS: [&str; 6] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];
const PROXY_NAMES: [&str; 5] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "FTP_PROXY",
];

/// True for names that must never reach a sandboxed program, whatever the allow-list says.
pub fn is_scrubbed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|m| upper.contains(m)) || PROXY_NAMES.contains(&upper.as_str())
}

fn allowed(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// Builds the child's complete environment from `vars` (kt's environment) under `policy`.
pub fn build(
    policy: &EnvPolicy,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    workdir: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vars
        .into_iter()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            !(policy.home_is_workdir && name == "HOME")
                && policy.pass.iter().any(|p| allowed(p, name))
                && !is_scrubbed(name)
        })
        .collect();
    if policy.home_is_workdir {
        env.push(("HOME".into(), workdir.as_os_str().to_owned()));
    }
    for (name, value) in &policy.set {
        env.retain(|(n, _)| n != name.as_str());
        env.push((name.into(), value.into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn api_keys_and_proxies_never_pass_even_when_allow_listed() {
        let policy = EnvPolicy {
            pass: vec![
                "KT_*".into(),
                "PATH".into(),
                "https_proxy".into(),
                "PYTHON*".into(),
            ],
            set: vec![],
            home_is_workdir: true,
        };
        let env = build(
            &policy,
            vars(&[
                ("PATH", "/usr/bin"),
                ("KT_OPENAI_API_KEY", "sk-123"),
                ("KT_GPU", "1"),
                ("https_proxy", "http://proxy:3128"),
                ("PYTHON_TOKEN", "t"),
                ("PYTHONPATH", "/opt/py"),
                ("AWS_SECRET_ACCESS_KEY", "x"),
                ("HOME", "/root"),
            ]),
            Path::new("/tmp/w"),
        );
        let mut got = names(&env);
        got.sort();
        assert_eq!(got, ["HOME", "KT_GPU", "PATH", "PYTHONPATH"]);
        assert!(
            env.contains(&("HOME".into(), "/tmp/w".into())),
            "HOME must point at the work directory: {env:?}"
        );
    }

    #[test]
    fn explicit_additions_override_passed_values() {
        let policy = EnvPolicy {
            pass: vec!["LANG".into()],
            set: vec![("LANG".into(), "C.UTF-8".into())],
            home_is_workdir: false,
        };
        let env = build(
            &policy,
            vars(&[("LANG", "de_DE.UTF-8"), ("HOME", "/root")]),
            Path::new("/w"),
        );
        assert_eq!(env, vars(&[("LANG", "C.UTF-8")]));
    }
}
