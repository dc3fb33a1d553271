//! What `kt tune` and `kt verify` read before the GPU is touched: the kernel and its sidecar (a per-kernel
//! `NAME.KERNEL.toml` first), its template parameters, the launch overrides of the command line, and the
//! tests (generated from the sidecar, with arrays sized over the configurations that will run).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use kt_tuner::args::{ParamSpec, SizeChoice, SuiteInputs, TestSet};
use kt_tuner::session::TunableKernel;
use kt_tuner::session::setup::template_args_for;
use kt_tuner::space::{Config, TunableParam};
use kt_tuner::suite::{SuiteKernel, sidecar_for, template_params};

pub(crate) fn parse_kv(text: &str) -> anyhow::Result<(String, String)> {
    let (k, v) = text
        .split_once('=')
        .with_context(|| format!("`{text}`: expected NAME=VALUE"))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

pub(crate) fn parse_params(list: &[String]) -> anyhow::Result<Vec<TunableParam>> {
    list.iter()
        .map(|p| {
            let (name, values) = parse_kv(p)?;
            let values: Result<Vec<i64>, _> =
                values.split(',').map(|v| v.trim().parse::<i64>()).collect();
            Ok(TunableParam::new(
                name,
                values.with_context(|| format!("`{p}`: values must be integers"))?,
            ))
        })
        .collect()
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

/// The kernel, its parameter specs and how to make inputs: from the sidecar when there is one.
pub(crate) struct Loaded {
    pub kernel: TunableKernel,
    pub params: Vec<ParamSpec>,
    pub inputs: Option<SuiteInputs>,
    pub default_block: Option<[i64; 3]>,
    pub dims: usize,
    /// The parsed kernel (signature, template parameters).
    pub parsed: kt_cuda::Kernel,
    /// The sidecar the description came from.
    pub sidecar: Option<PathBuf>,
}

/// Which sidecar describes a kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SidecarChoice<'a> {
    /// The one beside the file ([`sidecar_for`]), if any.
    Beside,
    /// This one (`--candidate-sidecar`).
    Given(&'a Path),
    /// None: the kernel alone, its launch and inputs to come from elsewhere.
    Without,
}

/// The kernel of `file` with its tunable description; the file's directory is where NVRTC looks for its
/// own headers.
pub(crate) fn load_kernel(file: &Path, kernel: Option<&str>) -> anyhow::Result<Loaded> {
    load_kernel_with(file, kernel, SidecarChoice::Beside)
}

/// As [`load_kernel`], with the sidecar chosen.
pub(crate) fn load_kernel_with(
    file: &Path,
    kernel: Option<&str>,
    sidecar: SidecarChoice,
) -> anyhow::Result<Loaded> {
    let mut loaded = load_kernel_unit(file, kernel, sidecar)?;
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    loaded.kernel.include_dirs.push(dir.to_path_buf());
    Ok(loaded)
}

fn load_kernel_unit(
    file: &Path,
    kernel: Option<&str>,
    sidecar: SidecarChoice,
) -> anyhow::Result<Loaded> {
    let source =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    // headers followed: a kernel may live in an included `.cuh`
    let parsed = kt_cuda::parse_file(file)?;
    let sidecar_path = match sidecar {
        SidecarChoice::Given(p) => Some(p.to_path_buf()),
        SidecarChoice::Beside => sidecar_for(file, kernel),
        SidecarChoice::Without => None,
    };
    if let Some(path) = sidecar_path {
        let sc = kt_cuda::Sidecar::load(&path)?;
        let dims = sc.problem_size.len();
        let sk = SuiteKernel::from_parsed(&source, &parsed, &sc, kernel)
            .with_context(|| format!("with the sidecar {}", path.display()))?;
        let k = parsed.select_kernel(Some(&sk.kernel.kernel_name))?.clone();
        return Ok(Loaded {
            kernel: sk.kernel,
            params: sk.params,
            inputs: Some(sk.inputs),
            default_block: Some(sk.default_block),
            dims,
            parsed: k,
            sidecar: Some(path),
        });
    }
    let k = parsed.select_kernel(kernel)?.clone();
    Ok(Loaded {
        kernel: TunableKernel::new(source.clone(), k.name.clone(), Vec::new()),
        params: ParamSpec::from_kernel(&k),
        inputs: None,
        default_block: None,
        dims: 0,
        parsed: k,
        sidecar: None,
    })
}

impl Loaded {
    /// Fills the template arguments of a templated kernel: a template parameter among the tuned ones is
    /// instantiated per configuration, one in `given` (`--template T=float`) or with a default takes that
    /// value; any other is an error saying which to give.
    pub fn set_template_args(
        &mut self,
        tuned: &[TunableParam],
        given: &BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        let params = template_params(&self.parsed);
        if let Some(unknown) = given.keys().find(|g| !params.iter().any(|(n, _)| n == *g)) {
            bail!(
                "--template {unknown}=…: kernel `{}` has no template parameter `{unknown}` (it has: {})",
                self.kernel.kernel_name,
                params
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        self.kernel.template_args =
            template_args_for(&self.kernel.kernel_name, &params, tuned, given)
                .map_err(|e| anyhow::anyhow!("{e} (a type parameter: --template NAME=TYPE)"))?;
        Ok(())
    }

    /// Makes array sizes that name launch parameters (`ceil_div(n, block_size_x)`) follow each
    /// configuration.
    pub fn size_arrays_per_configuration(&mut self) {
        if let Some(inputs) = &self.inputs {
            self.kernel.geometry.array_sizes = inputs.config_dependent_sizes(&self.params);
        }
    }
}

/// Every configuration of `params` (the product of their values, restrictions aside: an upper bound for
/// sizing arrays) plus `extra` ones.
pub(crate) fn all_configs(params: &[TunableParam], extra: &[Config]) -> Vec<Config> {
    let mut configs = vec![Config(vec![])];
    for p in params {
        configs = configs
            .into_iter()
            .flat_map(|c| {
                p.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.0.push((p.name.clone(), *v));
                    c
                })
            })
            .collect();
    }
    configs.extend(extra.iter().cloned());
    configs
}

pub(crate) fn load_tests(
    loaded: &Loaded,
    tests: Option<&Path>,
    test_size: bool,
    count: usize,
    sizes: &BTreeMap<String, f64>,
    configs: &[Config],
) -> anyhow::Result<TestSet> {
    let tolerances = loaded
        .inputs
        .as_ref()
        .map(|i| i.tolerances_for(&loaded.params))
        .unwrap_or_default();
    if let Some(dir) = tests {
        return Ok(TestSet::load_dir(dir, &loaded.params, &tolerances)?);
    }
    let Some(inputs) = &loaded.inputs else {
        bail!("no sidecar next to the kernel, so inputs cannot be generated: give --tests DIR");
    };
    let size = if test_size {
        SizeChoice::Test
    } else {
        SizeChoice::Bench
    };
    Ok(inputs.make_tests_for(&loaded.params, size, sizes, count, configs)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn corpus(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel)
    }

    #[test]
    fn the_space_product_covers_every_value_combination() {
        let params = vec![
            TunableParam::new("block_size_x", [32, 64]),
            TunableParam::new("tile", [1, 2, 4]),
        ];
        let c = all_configs(&params, &[Config(vec![("block_size_x".into(), 256)])]);
        assert_eq!(c.len(), 7);
        assert_eq!(c[0].to_string(), "block_size_x=32 tile=1");
    }

    #[test]
    fn the_reduction_sizes_its_output_by_the_block_size() {
        let mut loaded = load_kernel(&corpus("naive-kernels/reduce_sum.cu"), None).unwrap();
        loaded.size_arrays_per_configuration();
        assert_eq!(
            loaded
                .kernel
                .geometry
                .array_sizes
                .get("output")
                .map(String::as_str),
            Some("ceil_div(n, block_size_x)")
        );
        let configs = all_configs(&[TunableParam::new("block_size_x", [64, 256])], &[]);
        let tests = load_tests(&loaded, None, true, 1, &BTreeMap::new(), &configs).unwrap();
        let out = tests.tests[0]
            .arrays()
            .find(|a| a.name == "output")
            .unwrap();
        assert_eq!(out.elements, 10007u64.div_ceil(64));
    }

    #[test]
    fn a_templated_kernel_needs_its_template_parameter_tuned_or_given() {
        let file = corpus("tests/corpus/programs/sample-style/reduction.cu");
        let mut loaded = load_kernel(&file, Some("reduce3")).unwrap();
        assert!(
            loaded
                .sidecar
                .as_ref()
                .unwrap()
                .ends_with("reduction.reduce3.toml")
        );
        let err = loaded
            .set_template_args(&[], &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("blockSize") && err.contains("--param"),
            "{err}"
        );
        loaded
            .set_template_args(
                &[TunableParam::new("blockSize", [128, 256])],
                &BTreeMap::new(),
            )
            .unwrap();
        assert_eq!(loaded.kernel.template_args, vec!["blockSize"]);
        let given = BTreeMap::from([("blockSize".to_string(), "256".to_string())]);
        loaded.set_template_args(&[], &given).unwrap();
        assert_eq!(loaded.kernel.template_args, vec!["256"]);
        let wrong = BTreeMap::from([("T".to_string(), "float".to_string())]);
        assert!(loaded.set_template_args(&[], &wrong).is_err());
    }
}
