//! Every kernel of the naive-kernels suite parses, and its sidecar agrees with the parsed signature.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use kt_cuda::{Sidecar, parse_file};

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels")
}

fn suite_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(suite_dir())
        .expect("naive-kernels/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_suite_kernel_parses_and_matches_its_sidecar() {
    let files = suite_files();
    assert!(
        !files.is_empty(),
        "no .cu files in {}",
        suite_dir().display()
    );
    let mut failures = Vec::new();
    for cu in &files {
        let source = match parse_file(cu) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{}: {e}", cu.display()));
                continue;
            }
        };
        let sidecar = match Sidecar::load(&Sidecar::path_for(cu)) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{}: {e}", cu.display()));
                continue;
            }
        };
        let kernel = match source.select_kernel(Some(&sidecar.kernel)) {
            Ok(k) => k,
            Err(e) => {
                failures.push(format!("{}: {e}", cu.display()));
                continue;
            }
        };
        if let Err(problems) = sidecar.check_against(kernel) {
            for p in problems {
                failures.push(format!("{}: {p}", cu.display()));
            }
        }
        // the suite's rule: one kernel per file, launched with a block size read from blockDim
        assert_eq!(
            source.kernels().len(),
            1,
            "{}: expected one kernel",
            cu.display()
        );
    }
    assert!(
        failures.is_empty(),
        "suite problems:\n{}",
        failures.join("\n")
    );
}

#[test]
fn suite_kernels_are_plain_global_as_people_write_them_with_one_neutral_comment_line() {
    // The suite is written the way GPU programmers write kernels (C++ linkage, no extern "C"), and the whole
    // file goes into every prompt, so a comment that hints at an optimisation would give the answer away.
    const HINTS: &[&str] = &[
        "shared", "coalesc", "tile", "vectoris", "vectoriz", "naive", "unroll", "register",
    ];
    for cu in suite_files() {
        let source = parse_file(&cu).unwrap();
        for k in source.kernels() {
            assert!(
                !k.extern_c,
                "{}: kernel {} is extern \"C\"",
                cu.display(),
                k.name
            );
        }
        let text = std::fs::read_to_string(&cu).unwrap();
        let comments: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("//"))
            .collect();
        assert!(
            comments.len() <= 1,
            "{}: more than one comment line",
            cu.display()
        );
        for c in comments {
            let lower = c.to_lowercase();
            assert!(
                !HINTS.iter().any(|h| lower.contains(h)),
                "{}: comment hints at an optimisation: {c}",
                cu.display()
            );
        }
    }
}
