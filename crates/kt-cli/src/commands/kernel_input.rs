//! The command-line side of `kt tune` and `kt verify`'s inputs: launch overrides, `NAME=VALUE` lists and
//! the cache directory. What they mean (which sidecar, which template arguments, which tests) is decided in
//! kt-tuner's `input`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use kt_tuner::model::space::TunableParam;

/// How the kernel is launched, when the sidecar does not say or says otherwise (`kt tune`; in `kt verify`,
/// the candidate's launch).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LaunchFlags {
    /// Problem size expressions, comma-separated, x first (default: the sidecar's).
    #[arg(long, value_name = "EXPR,..")]
    pub problem_size: Option<String>,
    /// Grid divisors for x, comma-separated names or expressions (default: block_size_x).
    #[arg(long, value_name = "EXPR,..")]
    pub grid_div_x: Option<String>,
    /// Grid divisors for y (default: block_size_y).
    #[arg(long, value_name = "EXPR,..")]
    pub grid_div_y: Option<String>,
    /// Grid divisors for z (default: block_size_z).
    #[arg(long, value_name = "EXPR,..")]
    pub grid_div_z: Option<String>,
    /// Dynamic shared memory in bytes, as an expression over parameters and scalars.
    #[arg(long, value_name = "EXPR")]
    pub shared_mem: Option<String>,
}

impl LaunchFlags {
    /// Puts the given flags over `geometry`.
    pub fn apply(&self, geometry: &mut kt_tuner::Geometry) {
        if let Some(p) = &self.problem_size {
            geometry.problem_size = split_list(p);
        }
        for (d, div) in [&self.grid_div_x, &self.grid_div_y, &self.grid_div_z]
            .into_iter()
            .enumerate()
        {
            if let Some(div) = div {
                geometry.grid_div[d] = split_list(div);
            }
        }
        if let Some(s) = &self.shared_mem {
            geometry.shared_mem = Some(s.clone());
        }
    }
}

pub(crate) fn parse_kv(text: &str) -> anyhow::Result<(String, String)> {
    let (k, v) = text
        .split_once('=')
        .with_context(|| format!("`{text}`: expected NAME=VALUE"))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

pub(crate) fn parse_params(list: &[String]) -> anyhow::Result<Vec<TunableParam>> {
    Ok(list
        .iter()
        .map(|p| TunableParam::parse(p))
        .collect::<Result<_, _>>()?)
}

pub(crate) fn parse_sizes(list: &[String]) -> anyhow::Result<BTreeMap<String, f64>> {
    list.iter()
        .map(|s| {
            let (k, v) = parse_kv(s)?;
            Ok((
                k,
                v.parse::<f64>()
                    .with_context(|| format!("`{s}`: value must be a number"))?,
            ))
        })
        .collect()
}

/// `NAME=TEXT` pairs (`--template T=float`, `--arg tiles=ceil_div(n,32)`).
pub(crate) fn parse_pairs(list: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    list.iter().map(|s| parse_kv(s)).collect()
}

pub(crate) fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("kt").join("tuner"))
}

pub(crate) fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_needs_a_name_and_integer_values() {
        let p = parse_params(&["block_size_x=32, 64".into()]).unwrap();
        assert_eq!(p, vec![TunableParam::new("block_size_x", [32, 64])]);
        let err = parse_params(&["=32".into()]).unwrap_err().to_string();
        assert!(err.contains("no name"), "{err}");
        // any Kernel Tuner kind of value, except for the block size (issue 31)
        assert!(parse_params(&["block_size_x=1.5".into()]).is_err());
        let p = parse_params(&["x=1.5,'float'".into()]).unwrap();
        let want = [
            kt_tuner::ParamValue::Float(1.5),
            kt_tuner::ParamValue::Str("float".into()),
        ];
        assert_eq!(p, vec![TunableParam::new("x", want)]);
        assert!(parse_params(&["x".into()]).is_err());
    }

    #[test]
    fn launch_flags_replace_only_what_they_name() {
        let mut g = kt_tuner::Geometry::new(vec!["n".into()]);
        let flags = LaunchFlags {
            grid_div_y: Some("block_size_y, 2".into()),
            ..LaunchFlags::default()
        };
        flags.apply(&mut g);
        assert_eq!(g.problem_size, ["n"]);
        assert_eq!(g.grid_div[1], ["block_size_y", "2"]);
    }
}
