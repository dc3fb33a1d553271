//! Where kt's caches that outlive a run live: `$XDG_CACHE_HOME/kt/<name>`, else `~/.cache/kt/<name>`, unless
//! an environment variable of their own names another directory or says `off`.

use std::ffi::OsString;
use std::path::PathBuf;

/// The cache `name` under kt's cache directory, or what the variable `env` says: a directory, or `off` for none.
pub fn kt_cache_dir(env: &str, name: &str) -> Option<PathBuf> {
    cache_dir_for(
        std::env::var_os(env),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
        name,
    )
}

fn cache_dir_for(
    own: Option<OsString>,
    xdg_cache: Option<OsString>,
    home: Option<OsString>,
    name: &str,
) -> Option<PathBuf> {
    match own {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => xdg_cache
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.map(|h| PathBuf::from(h).join(".cache")))
            .map(|base| base.join("kt").join(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_of_the_cache_wins_then_xdg_then_home() {
        let some = |s: &str| Some(OsString::from(s));
        let dir = |own, xdg, home| cache_dir_for(own, xdg, home, "things");
        assert_eq!(dir(some("off"), some("/x"), some("/h")), None);
        assert_eq!(
            dir(some("/own"), some("/x"), some("/h")),
            Some("/own".into())
        );
        assert_eq!(
            dir(None, some("/x"), some("/h")),
            Some("/x/kt/things".into())
        );
        assert_eq!(
            dir(some(""), some(""), some("/h")),
            Some("/h/.cache/kt/things".into())
        );
        assert_eq!(dir(None, None, None), None);
    }
}
