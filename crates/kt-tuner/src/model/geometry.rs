//! Launch geometry from a configuration, Kernel Tuner's way: the block is `block_size_x/y/z` (defaults
//! 256/1/1 when not tuned; other names when the caller gives them, see `block_names`), the grid is ceil(problem_size / product of the grid divisors) per dimension, so a
//! kernel that does more work per thread gets a smaller grid when its divisor lists say so.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::TunerError;
use crate::model::block_names::BlockNames;
use crate::model::expr::{Bindings, eval_count};
use crate::model::space::Config;

/// How a configuration maps to a launch. Expressions may use parameter names and scalar argument names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    /// Problem size per dimension (x first); missing dimensions are 1.
    pub problem_size: Vec<String>,
    /// Grid divisors per dimension: the grid is ceil(problem_size / product of these). Default:
    /// `block_size_x`, `block_size_y`, `block_size_z`.
    pub grid_div: [Vec<String>; 3],
    /// Dynamic shared memory in bytes, as an expression (e.g. `block_size_x*4`); none means 0.
    pub shared_mem: Option<String>,
    /// Element counts of arrays whose size depends on the configuration (`output` =
    /// `ceil_div(n, block_size_x)`): they are allocated at their largest, and each run poisons, compares and
    /// records only the elements its configuration covers.
    #[serde(default)]
    pub array_sizes: BTreeMap<String, String>,
    /// The parameters that set the block (`block_size_x/y/z` unless the caller names others).
    #[serde(default, skip_serializing_if = "BlockNames::is_default")]
    pub block_names: BlockNames,
}

impl Geometry {
    pub fn new(problem_size: Vec<String>) -> Self {
        Geometry {
            problem_size,
            grid_div: [
                vec!["block_size_x".into()],
                vec!["block_size_y".into()],
                vec!["block_size_z".into()],
            ],
            shared_mem: None,
            array_sizes: BTreeMap::new(),
            block_names: BlockNames::default(),
        }
    }

    /// Makes `names` the block-size parameters; grid divisors still at their default (the old block-size
    /// name of their dimension) follow.
    pub fn set_block_names(&mut self, names: BlockNames) {
        for (d, div) in self.grid_div.iter_mut().enumerate() {
            if *div == [self.block_names.0[d].clone()] {
                *div = vec![names.0[d].clone()];
            }
        }
        self.block_names = names;
    }

    /// Bindings for a configuration: scalar arguments, then the block sizes at their defaults under this
    /// geometry's names, then the configuration.
    pub fn bindings(&self, config: &Config, scalars: &Bindings) -> Bindings {
        let mut env = scalars.clone();
        for (d, n) in self.block_names.iter().enumerate() {
            env.insert(n.to_string(), BlockNames::default_size(d) as f64);
        }
        env.extend(config.bindings());
        env
    }

    /// Divides the grid by the tiles the kernel's code says each block covers (`blockIdx.y * TILE_DIM +
    /// threadIdx.y` with a loop stepping over the tile's rows: the grid in y is rows / TILE_DIM, not rows /
    /// block_size_y). Only dimensions still at their default; the command line overrides this afterwards.
    pub fn divide_by_kernel_tiles(&mut self, kernel: &kt_cuda::Kernel) {
        for d in &kernel.grid_divisors {
            if d.dim < 3 && self.grid_div[d.dim] == [self.block_names.0[d.dim].clone()] {
                self.grid_div[d.dim] = vec![d.value.clone()];
            }
        }
    }

    /// The element counts (scalar elements: struct elements × `lanes` of the array named) of the arrays in
    /// `array_sizes` at `config`.
    pub fn extents(
        &self,
        config: &Config,
        scalars: &Bindings,
        lanes: impl Fn(&str) -> u32,
    ) -> Result<Vec<(String, u64)>, TunerError> {
        let env = self.bindings(config, scalars);
        self.array_sizes
            .iter()
            .map(|(name, e)| Ok((name.clone(), eval_count(e, &env)? * lanes(name) as u64)))
            .collect()
    }
}

/// A concrete launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchDims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
}

/// Kernel Tuner's defaults: a parameter the user does not tune gets these values.
pub fn default_define(name: &str) -> Option<i64> {
    match name {
        "block_size_x" => Some(256),
        "block_size_y" | "block_size_z" => Some(1),
        _ => None,
    }
}

/// Bindings for a configuration under the default block-size names: scalar arguments, then the block-size
/// defaults, then the configuration.
pub fn bindings(config: &Config, scalars: &Bindings) -> Bindings {
    Geometry::new(Vec::new()).bindings(config, scalars)
}

fn to_u32(v: u64, what: &str) -> Result<u32, TunerError> {
    u32::try_from(v).map_err(|_| {
        TunerError::Space(format!("{what} = {v} does not fit a CUDA launch dimension"))
    })
}

impl Geometry {
    pub fn problem(&self, config: &Config, scalars: &Bindings) -> Result<[u64; 3], TunerError> {
        let env = self.bindings(config, scalars);
        let mut p = [1u64; 3];
        for (d, e) in self.problem_size.iter().take(3).enumerate() {
            p[d] = eval_count(e, &env)?;
        }
        Ok(p)
    }

    pub fn launch(&self, config: &Config, scalars: &Bindings) -> Result<LaunchDims, TunerError> {
        let env = self.bindings(config, scalars);
        let problem = self.problem(config, scalars)?;
        let mut block = [1u32; 3];
        for (d, n) in self.block_names.iter().enumerate() {
            block[d] = to_u32(eval_count(n, &env)?, n)?;
        }
        let mut grid = [1u32; 3];
        for d in 0..3 {
            let mut div = 1u64;
            for e in &self.grid_div[d] {
                div = div.saturating_mul(eval_count(e, &env)?);
            }
            if div == 0 {
                return Err(TunerError::Space(format!(
                    "grid divisor for dimension {d} is 0 in {config}"
                )));
            }
            grid[d] = to_u32(problem[d].div_ceil(div).max(1), "grid size")?;
        }
        let shared_mem = match &self.shared_mem {
            Some(e) => to_u32(eval_count(e, &env)?, "dynamic shared memory")?,
            None => 0,
        };
        Ok(LaunchDims {
            grid,
            block,
            shared_mem,
        })
    }

    /// The `#define` lines a configuration adds in front of the kernel source (Kernel Tuner's convention):
    /// every parameter, the block-size defaults for those not tuned, and the grid size.
    pub fn defines(
        &self,
        config: &Config,
        scalars: &Bindings,
    ) -> Result<Vec<(String, String)>, TunerError> {
        let dims = self.launch(config, scalars)?;
        let mut out: Vec<(String, String)> = config
            .0
            .iter()
            // Python's str() of the value, a newline continued as Kernel Tuner does
            .map(|(n, v)| (n.clone(), v.to_string().replace('\n', "\\\n")))
            .collect();
        for (i, n) in self.block_names.iter().enumerate() {
            if config.value(n).is_none() {
                out.push((n.to_string(), dims.block[i].to_string()));
            }
        }
        for (i, n) in ["grid_size_x", "grid_size_y", "grid_size_z"]
            .iter()
            .enumerate()
        {
            out.push((n.to_string(), dims.grid[i].to_string()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, i64)]) -> Config {
        Config::ints(pairs.iter().copied())
    }

    #[test]
    fn grid_is_ceil_of_problem_over_block() {
        let g = Geometry::new(vec!["B_width".into(), "A_height".into()]);
        let s: Bindings = [
            ("B_width".to_string(), 100.0),
            ("A_height".to_string(), 77.0),
        ]
        .into();
        let d = g
            .launch(&cfg(&[("block_size_x", 32), ("block_size_y", 8)]), &s)
            .unwrap();
        assert_eq!(d.grid, [4, 10, 1]);
        assert_eq!(d.block, [32, 8, 1]);
    }

    #[test]
    fn work_per_thread_shrinks_the_grid_through_divisors() {
        let mut g = Geometry::new(vec!["n".into()]);
        g.grid_div[0] = vec!["block_size_x".into(), "work_per_thread_x".into()];
        let s: Bindings = [("n".to_string(), 1000.0)].into();
        let d = g
            .launch(&cfg(&[("block_size_x", 128), ("work_per_thread_x", 4)]), &s)
            .unwrap();
        assert_eq!(d.grid, [2, 1, 1]);
    }

    #[test]
    fn a_tile_covered_by_fewer_rows_of_threads_divides_the_grid_by_the_tile() {
        let src = "#define TILE_DIM 32\n#define BLOCK_ROWS 8\n__global__ void t(float *o, const float *in, int w, int h) {\n  int x = blockIdx.x * TILE_DIM + threadIdx.x;\n  int y = blockIdx.y * TILE_DIM + threadIdx.y;\n  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) o[(y + j) * w + x] = in[(y + j) * w + x];\n}\n";
        let kernel = kt_cuda::parse(src).unwrap().kernels()[0].clone();
        let mut g = Geometry::new(vec!["w".into(), "h".into()]);
        g.divide_by_kernel_tiles(&kernel);
        let s: Bindings = [("w".to_string(), 1024.0), ("h".to_string(), 1024.0)].into();
        let d = g
            .launch(&cfg(&[("block_size_x", 32), ("block_size_y", 8)]), &s)
            .unwrap();
        assert_eq!(d.grid, [32, 32, 1]);
        // a divisor the user set stays
        let mut given = Geometry::new(vec!["w".into(), "h".into()]);
        given.grid_div[1] = vec!["16".into()];
        given.divide_by_kernel_tiles(&kernel);
        assert_eq!(given.grid_div[1], vec!["16".to_string()]);
    }

    #[test]
    fn untuned_block_sizes_default_like_kernel_tuner() {
        let g = Geometry::new(vec!["n".into()]);
        let s: Bindings = [("n".to_string(), 1024.0)].into();
        let defs = g.defines(&cfg(&[("tile", 2)]), &s).unwrap();
        assert!(defs.contains(&("block_size_x".into(), "256".into())));
        assert!(defs.contains(&("grid_size_x".into(), "4".into())));
        assert!(defs.contains(&("tile".into(), "2".into())));
    }

    #[test]
    fn named_block_sizes_set_the_launch_the_defines_and_the_grid() {
        let mut g = Geometry::new(vec!["w".into(), "h".into()]);
        g.set_block_names(BlockNames::new(&["bx".into(), "by".into()]).unwrap());
        assert_eq!(g.grid_div[0], ["bx"]);
        assert_eq!(g.grid_div[2], ["block_size_z"]);
        let s: Bindings = [("w".to_string(), 100.0), ("h".to_string(), 64.0)].into();
        let c = cfg(&[("bx", 32), ("by", 4), ("block_size_x", 999)]);
        let d = g.launch(&c, &s).unwrap();
        assert_eq!(d.block, [32, 4, 1]);
        assert_eq!(d.grid, [4, 16, 1]);
        let defs = g.defines(&cfg(&[("bx", 32)]), &s).unwrap();
        assert!(defs.contains(&("bx".into(), "32".into())));
        // untuned named sizes are defined at Kernel Tuner's defaults under their names
        assert!(defs.contains(&("by".into(), "1".into())));
        assert!(defs.contains(&("block_size_z".into(), "1".into())));
        assert!(
            !defs
                .iter()
                .any(|(n, _)| n == "block_size_x" || n == "block_size_y")
        );
        // a divisor the user set stays when the names change
        let mut given = Geometry::new(vec!["w".into()]);
        given.grid_div[0] = vec!["16".into()];
        given.set_block_names(BlockNames::new(&["bx".into()]).unwrap());
        assert_eq!(given.grid_div[0], ["16"]);
    }

    #[test]
    fn default_block_names_are_not_serialized() {
        let g = Geometry::new(vec!["n".into()]);
        let text = serde_json::to_string(&g).unwrap();
        assert!(!text.contains("block_names"), "{text}");
        let back: Geometry = serde_json::from_str(&text).unwrap();
        assert_eq!(back, g);
    }

    #[test]
    fn array_extents_follow_the_configuration() {
        let mut g = Geometry::new(vec!["n".into()]);
        g.array_sizes
            .insert("output".into(), "ceil_div(n, block_size_x)".into());
        let s: Bindings = [("n".to_string(), 1000.0)].into();
        let at = |b: i64| g.extents(&cfg(&[("block_size_x", b)]), &s, |_| 1).unwrap();
        assert_eq!(at(128), vec![("output".to_string(), 8)]);
        assert_eq!(at(32), vec![("output".to_string(), 32)]);
        assert_eq!(
            g.extents(&cfg(&[]), &s, |_| 2).unwrap(),
            vec![("output".to_string(), 8)]
        );
    }

    #[test]
    fn shared_memory_expression_is_evaluated() {
        let mut g = Geometry::new(vec!["n".into()]);
        g.shared_mem = Some("block_size_x * 4 * 2".into());
        let s: Bindings = [("n".to_string(), 10.0)].into();
        assert_eq!(
            g.launch(&cfg(&[("block_size_x", 64)]), &s)
                .unwrap()
                .shared_mem,
            512
        );
    }

    #[test]
    fn float_bool_and_string_values_are_defined_as_python_writes_them() {
        let g = Geometry::new(vec!["n".into()]);
        let s: Bindings = [("n".to_string(), 1024.0)].into();
        let config = Config(vec![
            ("alpha".into(), 1.0.into()),
            ("flag".into(), true.into()),
            ("unroll".into(), "#pragma unroll\nfor".into()),
        ]);
        let defs = g.defines(&config, &s).unwrap();
        assert!(defs.contains(&("alpha".into(), "1.0".into())));
        assert!(defs.contains(&("flag".into(), "True".into())));
        assert!(defs.contains(&("unroll".into(), "#pragma unroll\\\nfor".into())));
    }
}
