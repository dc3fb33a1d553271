//! Where kt's caches that outlive a run live: `$XDG_CACHE_HOME/kt/<name>`, else `~/.cache/kt/<name>`, unless
//! an environment variable of their own names another directory or says `off`.

use std::path::PathBuf;

/// The cache `name` under kt's cache directory, or what `env` says: a directory, or `off` for none.
pub(crate) fn kt_cache_dir(env: &str, name: &str) -> Option<PathBuf> {
    match std::env::var_os(env) {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|base| base.join("kt").join(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unset_variable_gives_kts_cache_directory() {
        // a variable no test sets: the default applies (HOME or XDG_CACHE_HOME is set wherever tests run)
        let dir = kt_cache_dir("KT_CACHE_DIR_TEST_NEVER_SET", "things");
        assert!(dir.is_some_and(|d| d.ends_with("kt/things")));
    }
}
