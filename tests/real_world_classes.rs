//! End-to-end tests of the failure classes real repositories showed (issue 33), each from a small file of
//! ours in tests/corpus/real-world-classes: a header chain with host-only headers, standard C constants, a
//! kernel that works at one launch only, a macro only an `#ifdef` tests, template values from the program's own launches, a block shape
//! from macros, a `#pragma` between a loop's head and its body, a kernel defined through a macro, and
//! dynamic shared memory through a helper type.

#![allow(clippy::unwrap_used)]

use std::process::Output;

mod support;
use support::text;

const DIR: &str = "tests/corpus/real-world-classes";

fn kt(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    support::kt(home.path(), args)
}

fn file(name: &str) -> String {
    format!("{DIR}/{name}")
}

/// `kt tune FILE --compile-only`: what tuning would compile, compiled for sm_90 without a GPU.
fn compile_only(name: &str, extra: &[&str]) -> Output {
    let f = file(name);
    let mut args = vec!["tune", f.as_str(), "--test-size", "--compile-only"];
    args.extend_from_slice(extra);
    kt(&args)
}

#[test]
fn host_only_headers_of_a_header_chain_never_reach_the_unit() {
    let out = kt(&["inspect", &file("host_headers.cu"), "--unit"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let unit = text(&out.stdout);
    assert!(unit.contains("__global__ void scale"), "{unit}");
    for host in [
        "<strings.h>",
        "<exception>",
        "<stdio.h>",
        "strcasecmp",
        "CheckFailed",
    ] {
        assert!(!unit.contains(host), "{host} reached the unit:\n{unit}");
    }
    // <math.h> can give device code something: it stays
    assert!(unit.contains("#include <math.h>"), "{unit}");
}

#[test]
fn a_macro_that_only_an_ifdef_tests_comes_with_the_block_it_selects() {
    let out = kt(&["inspect", &file("dataset_macros.cu"), "--unit"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let unit = text(&out.stdout);
    assert!(unit.contains("#define STANDARD_DATASET"), "{unit}");
    assert!(unit.contains("#define NY 4096"), "{unit}");
    assert!(!unit.contains("printf"), "{unit}");
}

#[test]
fn a_block_shape_from_macros_a_pragma_inside_a_loop_and_a_helpers_shared_memory_are_read_right() {
    let out = kt(&["inspect", &file("macro_shapes.cu"), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kernel = |name: &str| {
        j["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {j}"))
            .clone()
    };
    // the `#pragma unroll` between the loop's head and its body costs the kernel nothing
    let t = kernel("transpose_rows");
    let restrictions: Vec<&str> = t["restrictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["expr"].as_str().unwrap())
        .collect();
    assert!(
        restrictions.contains(&"block_size_x == 32"),
        "{restrictions:?}"
    );
    assert!(
        restrictions.contains(&"block_size_y == 8"),
        "{restrictions:?}"
    );
    assert!(
        !restrictions.contains(&"block_size_y == 32"),
        "{restrictions:?}"
    );
    let s = kernel("shared_sum");
    assert_eq!(s["features"]["uses_dynamic_shared_memory"], true, "{s}");
    // the kernel made by a macro is listed, not dropped
    assert_eq!(j["macro_kernels"][0]["name"], "abs_all", "{j}");
    assert_eq!(j["macro_kernels"][0]["macro_name"], "ELEMENTWISE", "{j}");
}

#[test]
fn one_kernel_asked_for_never_hides_the_rest_and_a_macro_kernel_is_refused_with_a_reason() {
    let out = kt(&[
        "inspect",
        &file("macro_shapes.cu"),
        "--kernel",
        "shared_sum",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    assert!(
        summary.starts_with(&format!(
            "{DIR}/macro_shapes.cu: 2 kernels, showing shared_sum (the others: transpose_rows)"
        )),
        "{summary}"
    );
    assert!(summary.contains("abs_all (ELEMENTWISE, line"), "{summary}");
    let out = kt(&["inspect", &file("macro_shapes.cu"), "--kernel", "abs_all"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("defined through the macro `ELEMENTWISE`"),
        "{err}"
    );
}

#[test]
fn the_programs_own_launches_give_template_values_and_the_code_gives_restrictions() {
    // printed before anything is compiled: checked whether or not this machine has NVRTC
    let out = compile_only("host_instances.cu", &[]);
    let err = text(&out.stderr);
    assert!(
        err.contains("template parameter `blockSize` of `block_sum` tuned over 256, 128, 64"),
        "{err}"
    );
    assert!(
        err.contains("template parameter `nIsPow2` of `block_sum` = true"),
        "{err}"
    );
    assert!(
        err.contains("restriction from the code: block_size_x == blockSize"),
        "{err}"
    );
    // the user's choice wins
    let out = compile_only("host_instances.cu", &["--template", "blockSize=128"]);
    let err = text(&out.stderr);
    assert!(!err.contains("tuned over 256, 128, 64"), "{err}");

    let out = compile_only("fixed_block.cu", &[]);
    let err = text(&out.stderr);
    for r in [
        "block_size_x == 16",
        "block_size_y == 16",
        "block_size_x * block_size_y <= 256",
    ] {
        assert!(
            err.contains(&format!("restriction from the code: {r}")),
            "{r}: {err}"
        );
    }
}

#[test]
fn statement_macros_register_and_headers_nvcc_would_not_need_leave_every_kernel_readable() {
    // before: one row of bare statement macros made the kernel an ERROR node, and the generated header a
    // header includes, the header only `#ifdef WITH_COUNTERS` opens and `"cuda.h"` each stopped the compile
    let out = kt(&["inspect", &file("benchmark_macros.cu"), "--kernel", "madd"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains("2 kernels"), "{said}");
    assert!(
        said.contains("macros used: MADD_BLOCK, MADD_OP, MADD_OP4"),
        "{said}"
    );
    let out = kt(&[
        "inspect",
        &file("benchmark_macros.cu"),
        "--kernel",
        "madd",
        "--unit",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let unit = text(&out.stdout);
    assert!(
        unit.contains("register T s") && !unit.contains("bench_seconds"),
        "{unit}"
    );
}

#[test]
fn a_tile_of_rows_covered_by_fewer_threads_divides_the_grid_by_the_tile() {
    let f = file("benchmark_macros.cu");
    let out = kt(&["inspect", &f, "--kernel", "transpose_rows"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains("restriction: block_size_y == 8"), "{said}");
    assert!(
        said.contains("grid y: problem size / 32, not / block_size_y  (line 34:"),
        "{said}"
    );
}

#[test]
#[ignore = "needs NVRTC (libnvrtc.so.13): run with --include-ignored on a CUDA machine"]
fn every_class_compiles_as_tuning_compiles_it() {
    for (name, extra) in [
        ("host_headers.cu", vec![]),
        ("math_constants.cu", vec![]),
        ("fixed_block.cu", vec![]),
        ("dataset_macros.cu", vec![]),
        ("host_instances.cu", vec!["--template", "T=float"]),
        (
            "benchmark_macros.cu",
            vec!["--kernel", "madd", "--template", "T=float"],
        ),
    ] {
        let out = compile_only(name, &extra);
        let said = text(&out.stdout);
        // NVRTC first; nvcc where NVRTC lacks what nvcc has (`__builtin_huge_valf` of <math.h>'s INFINITY)
        assert!(
            out.status.success() && (said.contains("with NVRTC") || said.contains("with nvcc")),
            "{name}: {said}{}",
            text(&out.stderr)
        );
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_kernel_that_works_at_one_launch_only_gets_that_launch_as_its_verified_result() {
    let out = kt(&["tune", &file("fixed_block.cu"), "--test-size"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{}{err}", text(&out.stdout));
    assert!(err.contains("is not tunable as written"), "{err}");
    assert!(err.contains("`kt transform"), "{err}");
}
