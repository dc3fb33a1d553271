//! The search space: ordered tunable parameters, each with its list of values, cut down by restrictions
//! (expressions over parameter names or Rust closures) and by the device's limit on threads per block.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::TunerError;
use crate::model::block_names::{BLOCK_SIZE_NAMES, BlockNames};
use crate::model::expr::{Bindings, eval_bool_with};
use crate::model::param_value::ParamValue;

/// One tunable parameter, e.g. `block_size_x` ∈ {16, 32, 64} or `T` ∈ {"float", "double"}.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunableParam {
    pub name: String,
    pub values: Vec<ParamValue>,
}

impl TunableParam {
    pub fn new<V: Into<ParamValue>>(
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        TunableParam {
            name: name.into(),
            values: values.into_iter().map(Into::into).collect(),
        }
    }

    /// Reads `NAME=V1,V2,..` (a command line's `--param`): integers, floats, `True`/`False` and strings
    /// (quoted when they hold a comma).
    pub fn parse(text: &str) -> Result<Self, TunerError> {
        let bad = |why: &str| {
            TunerError::Space(format!("--param {text}: {why} (expected NAME=V1,V2,..)"))
        };
        let (name, values) = text.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(bad("the parameter has no name"));
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || name.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(bad(&format!(
                "`{name}` is not a C identifier, so it cannot be a #define"
            )));
        }
        let param = TunableParam::new(name, ParamValue::parse_list(values));
        match param.check_block_size(&[]) {
            Err(TunerError::Space(why)) => Err(TunerError::Space(format!("--param {text}: {why}"))),
            other => other.map(|()| param),
        }
    }

    /// Refuses a value a block-size parameter cannot take (a float, boolean or string), naming it.
    pub fn check_block_size(&self, block_size_names: &[String]) -> Result<(), TunerError> {
        let is_block = BLOCK_SIZE_NAMES.contains(&self.name.as_str())
            || block_size_names.iter().any(|n| n == &self.name);
        match self.values.iter().find(|v| v.as_int().is_none()) {
            Some(bad) if is_block => Err(TunerError::Space(format!(
                "parameter `{}` sets the block size, so its values must be integers; `{bad}` is {}",
                self.name,
                bad.kind()
            ))),
            _ => Ok(()),
        }
    }
}

/// One point of the space: a value for each parameter, in the space's parameter order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Config(pub Vec<(String, ParamValue)>);

impl Config {
    /// A configuration of integer values (block sizes, tiles), in the order given.
    pub fn ints<'a>(pairs: impl IntoIterator<Item = (&'a str, i64)>) -> Config {
        Config(
            pairs
                .into_iter()
                .map(|(n, v)| (n.to_string(), ParamValue::Int(v)))
                .collect(),
        )
    }

    /// The parameter's value when it is an integer (block sizes, tiles, counts).
    pub fn get(&self, name: &str) -> Option<i64> {
        self.value(name).and_then(ParamValue::as_int)
    }

    /// The parameter's value, of whatever kind.
    pub fn value(&self, name: &str) -> Option<&ParamValue> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The numeric values (booleans as 1 or 0) for size and launch expressions; strings are left out.
    pub fn bindings(&self) -> Bindings {
        self.0
            .iter()
            .filter_map(|(n, v)| v.as_number().map(|x| (n.clone(), x)))
            .collect()
    }

    /// Kernel Tuner's cache key: the values joined by commas, in parameter order.
    pub fn kt_key(&self) -> String {
        self.0
            .iter()
            .map(|(_, v)| v.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        write!(f, "{}", parts.join(" "))
    }
}

type Predicate = Arc<dyn Fn(&Config) -> bool + Send + Sync>;

/// A condition every configuration must meet.
#[derive(Clone)]
pub enum Restriction {
    /// An expression over parameter names (Python or C syntax), e.g. `block_size_x*block_size_y <= 512`.
    Expr(String),
    /// A Rust predicate, for conditions an expression cannot state.
    Closure(Predicate),
}

impl Restriction {
    pub fn closure(f: impl Fn(&Config) -> bool + Send + Sync + 'static) -> Self {
        Restriction::Closure(Arc::new(f))
    }

    fn allows(&self, config: &Config, extra: &Bindings) -> Result<bool, TunerError> {
        match self {
            Restriction::Expr(expr) => eval_bool_with(expr, extra, &config.0),
            Restriction::Closure(f) => Ok(f(config)),
        }
    }
}

impl fmt::Debug for Restriction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Restriction::Expr(e) => write!(f, "Expr({e:?})"),
            Restriction::Closure(_) => write!(f, "Closure(..)"),
        }
    }
}

/// The valid configurations, enumerated once (Kernel Tuner's spaces are at most a few hundred thousand points).
#[derive(Debug, Clone)]
pub struct SearchSpace {
    pub params: Vec<TunableParam>,
    pub configs: Vec<Config>,
}

impl SearchSpace {
    /// Builds the space. `extra` binds names restrictions may use besides the parameters (scalar arguments).
    /// `max_threads` is the device's limit on threads per block: configurations above it are dropped.
    pub fn build(
        params: &[TunableParam],
        restrictions: &[Restriction],
        extra: &Bindings,
        max_threads: Option<u64>,
    ) -> Result<Self, TunerError> {
        Self::build_for_blocks(
            params,
            restrictions,
            extra,
            max_threads,
            &BlockNames::default(),
        )
    }

    /// [`SearchSpace::build`] when the block sizes are the parameters `blocks` names.
    pub fn build_for_blocks(
        params: &[TunableParam],
        restrictions: &[Restriction],
        extra: &Bindings,
        max_threads: Option<u64>,
        blocks: &BlockNames,
    ) -> Result<Self, TunerError> {
        for p in params {
            if p.values.is_empty() {
                return Err(TunerError::Space(format!(
                    "parameter `{}` has no values",
                    p.name
                )));
            }
            p.check_block_size(&blocks.0)?;
        }
        let total: usize = params.iter().map(|p| p.values.len()).product();
        if total > 5_000_000 {
            return Err(TunerError::Space(format!(
                "{total} configurations before restrictions: too many to enumerate; narrow the value lists"
            )));
        }
        let mut configs = Vec::new();
        let mut index = vec![0usize; params.len()];
        'outer: for _ in 0..total {
            let config = Config(
                params
                    .iter()
                    .zip(&index)
                    .map(|(p, &i)| (p.name.clone(), p.values[i].clone()))
                    .collect(),
            );
            // advance the odometer, last parameter fastest (Kernel Tuner's itertools.product order)
            for d in (0..params.len()).rev() {
                index[d] += 1;
                if index[d] < params[d].values.len() {
                    break;
                }
                index[d] = 0;
            }
            if let Some(limit) = max_threads {
                let threads: i64 = blocks.iter().map(|n| config.get(n).unwrap_or(1)).product();
                if threads <= 0 || threads as u64 > limit {
                    continue 'outer;
                }
            }
            for r in restrictions {
                if !r.allows(&config, extra)? {
                    continue 'outer;
                }
            }
            configs.push(config);
        }
        Ok(SearchSpace {
            params: params.to_vec(),
            configs,
        })
    }

    pub fn len(&self) -> usize {
        self.configs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }

    pub fn index_of(&self, config: &Config) -> Option<usize> {
        self.configs.iter().position(|c| c == config)
    }

    /// Configurations that differ from `config` in exactly one parameter, by one step in its value list.
    pub fn neighbours(&self, config: &Config) -> Vec<usize> {
        let pos: Vec<Option<usize>> = self
            .params
            .iter()
            .map(|p| {
                config
                    .value(&p.name)
                    .and_then(|v| p.values.iter().position(|x| x == v))
            })
            .collect();
        self.configs
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                let mut changed = 0;
                for (p, own) in self.params.iter().zip(&pos) {
                    let other = c
                        .value(&p.name)
                        .and_then(|v| p.values.iter().position(|x| x == v));
                    match (own, other) {
                        (Some(a), Some(b)) if a == &b => {}
                        (Some(a), Some(b)) if a.abs_diff(b) == 1 => changed += 1,
                        _ => return false,
                    }
                }
                changed == 1
            })
            .map(|(i, _)| i)
            .collect()
    }
}

/// Every configuration of `params` (the product of their values, restrictions aside: an upper bound for
/// sizing arrays) plus `extra` ones.
pub fn every_config(params: &[TunableParam], extra: &[Config]) -> Vec<Config> {
    let mut configs = vec![Config(vec![])];
    for p in params {
        configs = configs
            .into_iter()
            .flat_map(|c| {
                p.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.0.push((p.name.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    configs.extend(extra.iter().cloned());
    configs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_space_product_covers_every_value_combination() {
        let params = vec![
            TunableParam::new("block_size_x", [32, 64]),
            TunableParam::new("tile", [1, 2, 4]),
        ];
        let c = every_config(&params, &[Config::ints([("block_size_x", 256)])]);
        assert_eq!(c.len(), 7);
        assert_eq!(c[0].to_string(), "block_size_x=32 tile=1");
    }

    fn matmul_params() -> Vec<TunableParam> {
        vec![
            TunableParam::new("block_size_x", [8, 16, 32, 64, 128, 256]),
            TunableParam::new("block_size_y", [1, 2, 4, 8, 16, 32]),
        ]
    }

    #[test]
    fn matmul_space_has_the_27_configs_kernel_tuner_finds() {
        let r = vec![Restriction::Expr(
            "32 <= block_size_x*block_size_y and block_size_x*block_size_y <= 1024".into(),
        )];
        let space = SearchSpace::build(&matmul_params(), &r, &Bindings::new(), Some(1024)).unwrap();
        assert_eq!(space.len(), 27);
        assert_eq!(
            space.configs[0].to_string(),
            "block_size_x=8 block_size_y=4"
        );
    }

    #[test]
    fn device_thread_limit_drops_oversized_blocks() {
        let space = SearchSpace::build(&matmul_params(), &[], &Bindings::new(), Some(256)).unwrap();
        assert!(
            space
                .configs
                .iter()
                .all(|c| c.get("block_size_x").unwrap() * c.get("block_size_y").unwrap() <= 256)
        );
        assert_eq!(space.len(), 21);
    }

    #[test]
    fn the_thread_limit_reads_named_block_sizes() {
        let params = vec![
            TunableParam::new("bx", [8, 16, 32, 64, 128, 256]),
            TunableParam::new("by", [1, 2, 4, 8, 16, 32]),
        ];
        let blocks = BlockNames::new(&["bx".into(), "by".into()]).unwrap();
        let space =
            SearchSpace::build_for_blocks(&params, &[], &Bindings::new(), Some(256), &blocks)
                .unwrap();
        assert_eq!(space.len(), 21);
        // under the default names `bx` and `by` are ordinary parameters: nothing is dropped
        let all = SearchSpace::build(&params, &[], &Bindings::new(), Some(256)).unwrap();
        assert_eq!(all.len(), 36);
        // and a named block size must be an integer
        let floats = vec![TunableParam::new("bx", [0.5, 1.0])];
        let e = SearchSpace::build_for_blocks(&floats, &[], &Bindings::new(), None, &blocks)
            .unwrap_err();
        assert!(e.to_string().contains("`bx` sets the block size"), "{e}");
    }

    #[test]
    fn closure_restrictions_apply() {
        let r = vec![Restriction::closure(|c| c.get("block_size_x") == Some(32))];
        let space = SearchSpace::build(&matmul_params(), &r, &Bindings::new(), None).unwrap();
        assert_eq!(space.len(), 6);
    }

    #[test]
    fn neighbours_change_one_parameter_by_one_step() {
        let space = SearchSpace::build(&matmul_params(), &[], &Bindings::new(), None).unwrap();
        let c = Config::ints([("block_size_x", 32), ("block_size_y", 4)]);
        let mut n: Vec<String> = space
            .neighbours(&c)
            .into_iter()
            .map(|i| space.configs[i].to_string())
            .collect();
        n.sort();
        assert_eq!(
            n,
            vec![
                "block_size_x=16 block_size_y=4",
                "block_size_x=32 block_size_y=2",
                "block_size_x=32 block_size_y=8",
                "block_size_x=64 block_size_y=4",
            ]
        );
    }

    #[test]
    fn empty_value_list_is_rejected() {
        let err = SearchSpace::build(
            &[TunableParam::new("x", Vec::<i64>::new())],
            &[],
            &Bindings::new(),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("`x`"));
    }

    #[test]
    fn restrictions_compare_float_bool_and_string_values() {
        let params = vec![
            TunableParam::new("factor", [0.5, 1.0, 2.0]),
            TunableParam::new("use_shared", [false, true]),
            TunableParam::new("T", ["float", "double"]),
        ];
        let r = vec![Restriction::Expr(
            "factor * 2 >= 2 and (use_shared or T == 'double')".into(),
        )];
        let space = SearchSpace::build(&params, &r, &Bindings::new(), None).unwrap();
        let shown: Vec<String> = space.configs.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            shown,
            [
                "factor=1.0 use_shared=False T=double",
                "factor=1.0 use_shared=True T=float",
                "factor=1.0 use_shared=True T=double",
                "factor=2.0 use_shared=False T=double",
                "factor=2.0 use_shared=True T=float",
                "factor=2.0 use_shared=True T=double",
            ]
        );
        assert_eq!(space.configs[0].kt_key(), "1.0,False,double");
    }

    #[test]
    fn a_command_line_parameter_reads_values_of_every_kind() {
        let p = TunableParam::parse("T='float','double'").unwrap();
        assert_eq!(p.values, [ParamValue::from("float"), "double".into()]);
        let p = TunableParam::parse("f=0.5,1,True").unwrap();
        assert_eq!(p.values, [ParamValue::Float(0.5), 1.into(), true.into()]);
        assert!(
            TunableParam::parse("=1")
                .unwrap_err()
                .to_string()
                .contains("no name")
        );
        assert!(
            TunableParam::parse("a-b=1")
                .unwrap_err()
                .to_string()
                .contains("C identifier")
        );
    }

    #[test]
    fn a_space_with_a_float_block_size_is_refused() {
        let err = SearchSpace::build(
            &[TunableParam::new("block_size_y", [1.5])],
            &[],
            &Bindings::new(),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("must be integers"), "{err}");
    }

    #[test]
    fn a_block_size_that_is_not_an_integer_is_refused_by_name() {
        let err = TunableParam::new("block_size_x", [32.0, 64.0])
            .check_block_size(&[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`block_size_x` sets the block size"), "{err}");
        assert!(err.contains("`32.0` is a float"), "{err}");
        let named = TunableParam::new("threads", ["a"]).check_block_size(&["threads".into()]);
        assert!(named.is_err());
        assert!(
            TunableParam::new("T", ["float"])
                .check_block_size(&[])
                .is_ok()
        );
    }
}
