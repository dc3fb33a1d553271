//! The Python script of an export: Kernel Tuner tuning the same space on the same kind of inputs, on this
//! machine's GPU or (`--simulate`) replaying kt's measurements from the cache file beside it. Every path is
//! relative to the script, so the directory can be copied anywhere.

use std::fmt::Write as _;

use crate::model::args::{ArraySource, Distribution, KernelTest, TestArg};

use super::python::{py_number, py_str, py_values};
use crate::model::param_value::ParamValue;

/// One restriction line: the Python expression and a comment saying where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct RestrictionLine {
    pub comment: String,
    pub python: String,
}

/// Everything the script says, already in Python.
#[derive(Debug, Clone)]
pub struct ScriptSpec {
    pub kernel_name: String,
    pub kt_version: String,
    pub device_name: String,
    /// The kernel source and the cache, relative to the script's directory.
    pub source_file: String,
    pub cache_file: String,
    pub script_file: String,
    pub params: Vec<(String, Vec<ParamValue>)>,
    pub restrictions: Vec<RestrictionLine>,
    /// Added in simulation mode only: the configurations kt measured, when its search did not cover the space.
    pub simulate_only: Option<RestrictionLine>,
    /// Problem size per dimension: an integer or a Python expression over the parameters.
    pub problem_size: Vec<String>,
    pub grid_div: [Vec<String>; 3],
    pub shared_mem: Option<String>,
    pub compiler_options: Vec<String>,
    /// File names of the stated test's .npy arrays beside the script, by argument name.
    pub array_files: Vec<(String, String)>,
    /// Kernel Tuner's `cmem_args`: each `__constant__` symbol of the stated test and its contents in Python.
    pub cmem_args: Vec<(String, String)>,
    pub time_basis: String,
    pub objective_basis: String,
    /// kt's best configuration as a Python dict literal (`None` when nothing passed).
    pub kt_best: String,
}

fn array_line(test_arg: &TestArg, files: &[(String, String)]) -> String {
    match test_arg {
        TestArg::Scalar(s) => format!("np.{}({})", s.dtype.numpy_name(), py_number(s.value)),
        TestArg::Array(a) => {
            let dt = a.dtype.numpy_name();
            match &a.source {
                ArraySource::Npy { .. } => {
                    let file = files
                        .iter()
                        .find(|(name, _)| name == &a.name)
                        .map(|(_, f)| f.as_str())
                        .unwrap_or("missing.npy");
                    npy_load(file, dt)
                }
                ArraySource::Generate { dist, .. } => generated(dist, a.elements, dt),
            }
        }
    }
}

/// An array read from `file` beside the script, flattened.
pub(super) fn npy_load(file: &str, dt: &str) -> String {
    format!(
        "np.load(os.path.join(HERE, {})).astype(np.{dt}).ravel()",
        py_str(file)
    )
}

/// `n` elements of dtype `dt` drawn from `dist` with the script's `rng`.
pub(super) fn generated(dist: &Distribution, n: u64, dt: &str) -> String {
    match dist {
        Distribution::Randn => format!("rng.standard_normal({n}).astype(np.{dt})"),
        Distribution::RandnScaled { sigma } => format!(
            "({} * rng.standard_normal({n})).astype(np.{dt})",
            py_number(*sigma)
        ),
        Distribution::Rand => format!("rng.random({n}).astype(np.{dt})"),
        Distribution::Zeros => format!("np.zeros({n}, dtype=np.{dt})"),
        Distribution::Ones => format!("np.ones({n}, dtype=np.{dt})"),
        Distribution::Fill { value } => {
            format!("np.full({n}, {}, dtype=np.{dt})", py_number(*value))
        }
        Distribution::RandInt { lo, hi } => {
            format!("rng.integers({lo}, {hi}, {n}).astype(np.{dt})")
        }
    }
}

fn py_list(items: &[String]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|s| py_str(s))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn restriction_block(out: &mut String, lines: &[RestrictionLine], indent: &str) {
    for r in lines {
        for c in r.comment.lines() {
            let _ = writeln!(out, "{indent}# {c}");
        }
        let _ = writeln!(out, "{indent}{},", py_str(&r.python));
    }
}

/// The script's text.
pub fn render(spec: &ScriptSpec, test: &KernelTest) -> String {
    let mut s = String::new();
    let k = &spec.kernel_name;
    let _ = write!(
        s,
        r#"#!/usr/bin/env python3
"""Kernel Tuner script exported by kt {ver} for kernel `{k}` (tuned by kt on {dev}).

  python3 {script}              tune with Kernel Tuner on this machine's GPU (lang="cupy")
  python3 {script} --simulate   replay kt's measurements ({cache}) in Kernel Tuner's simulation
                                   mode: no GPU needed; Kernel Tuner picks the best of kt's results

Paths are relative to this script: copy its directory and it runs there.
Times: {time_basis}.
kt's objective: {objective_basis}.
The restrictions are kt's, the device's thread limit, and the configurations kt saw fail
(Kernel Tuner would not notice a wrong answer, and a hung kernel stalls it): none can be selected.
"""
import argparse
import json
import os

import numpy as np
import kernel_tuner

HERE = os.path.dirname(os.path.abspath(__file__))
# the source itself, not its path: Kernel Tuner guesses from a string's length and characters whether it is one
with open(os.path.join(HERE, {src})) as f:
    KERNEL_SOURCE = f.read()
KT_CACHE = os.path.join(HERE, {cache_lit})
KT_BEST = {best}

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--simulate", action="store_true", help="replay kt's cache file, no GPU")
parser.add_argument("--objective", default="time", choices=["time", "kt_objective_ms"],
                    help="time: one launch on the stated test (Kernel Tuner's); kt_objective_ms: kt's, --simulate only")
parser.add_argument("--cache", help="a Kernel Tuner cache file for a real run (default: none)")
opts = parser.parse_args()
if opts.objective != "time" and not opts.simulate:
    parser.error("--objective kt_objective_ms needs --simulate: only kt's cache holds it")

# The inputs of kt's test {test_id}, in argument order.
rng = np.random.default_rng(1)
args = []
"#,
        ver = spec.kt_version,
        script = spec.script_file,
        dev = spec.device_name,
        cache = spec.cache_file,
        time_basis = spec.time_basis,
        objective_basis = spec.objective_basis,
        src = py_str(&spec.source_file),
        cache_lit = py_str(&spec.cache_file),
        best = spec.kt_best,
        test_id = test.id,
    );
    for a in &test.args {
        let _ = writeln!(
            s,
            "args.append({})  # {}",
            array_line(a, &spec.array_files),
            a.name()
        );
    }
    if !spec.cmem_args.is_empty() {
        s.push_str("\n# The __constant__ symbols the kernel reads, as in kt's test: written before each launch.\ncmem_args = dict()\n");
        for (name, python) in &spec.cmem_args {
            let _ = writeln!(s, "cmem_args[{}] = {python}", py_str(name));
        }
    }
    let problem = if spec.problem_size.len() == 1 {
        format!("({},)", spec.problem_size[0])
    } else {
        format!("({})", spec.problem_size.join(", "))
    };
    let _ = writeln!(s, "\nproblem_size = {problem}\ntune_params = dict()");
    for (name, values) in &spec.params {
        let _ = writeln!(s, "tune_params[{}] = {}", py_str(name), py_values(values));
    }
    s.push_str("\nrestrictions = [\n");
    restriction_block(&mut s, &spec.restrictions, "    ");
    s.push_str("]\n");
    if let Some(r) = &spec.simulate_only {
        s.push_str("if opts.simulate:\n    restrictions += [\n");
        restriction_block(&mut s, std::slice::from_ref(r), "        ");
        s.push_str("    ]\n");
    }
    let cmem = if spec.cmem_args.is_empty() {
        ""
    } else {
        "cmem_args=cmem_args, "
    };
    let smem = spec
        .shared_mem
        .as_ref()
        .map(|e| format!("smem_args=dict(size={}), ", py_str(e)))
        .unwrap_or_default();
    let _ = write!(
        s,
        r#"
results, env = kernel_tuner.tune_kernel(
    {name}, KERNEL_SOURCE, problem_size, args, tune_params,
    grid_div_x={gx}, grid_div_y={gy}, grid_div_z={gz},
    restrictions=restrictions, compiler_options={opts}, {smem}{cmem}lang="cupy",
    cache=KT_CACHE if opts.simulate else opts.cache, simulation_mode=opts.simulate,
    objective=opts.objective, objective_higher_is_better=False)
best = env["best_config"]
print("kt best:", json.dumps(KT_BEST))
if "__error__" in best or not isinstance(best.get(opts.objective), float):
    print("Kernel Tuner best: null")
    raise SystemExit("no configuration ran: every one failed or was restricted away")
print("Kernel Tuner best:", json.dumps({{p: best[p] for p in tune_params}}))
print("Kernel Tuner best {{}}: {{:.4f}} ms".format(opts.objective, best[opts.objective]))
"#,
        name = py_str(k),
        gx = py_list(&spec.grid_div[0]),
        gy = py_list(&spec.grid_div[1]),
        gz = py_list(&spec.grid_div[2]),
        opts = py_list(&spec.compiler_options),
    );
    s
}
