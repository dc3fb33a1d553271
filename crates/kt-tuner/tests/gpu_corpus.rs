//! GPU tests of whole programs and the wild corpus through `kernel_file`: each kernel's own unit (no host
//! code, headers from the file's directory, cooperative groups through the toolkit's headers, a namespaced
//! kernel by its qualified name) is tuned at its sidecar's test size and every configuration that runs is
//! verified; a templated block size is tuned with the block size following it. Run on a GPU machine with
//! `cargo test -p kt-tuner --test gpu_corpus -- --include-ignored --test-threads=1`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kt_tuner::compile::kernel_file::KernelFile;
use kt_tuner::input::derived::derive;
use kt_tuner::input::suite::{SuiteKernel, default_block_space, sidecar_for, template_params};
use kt_tuner::model::args::SizeChoice;
use kt_tuner::model::space::{Restriction, SearchSpace, TunableParam};
use kt_tuner::session::setup::template_args_for;
use kt_tuner::session::{TuneOptions, TuneResult, Verdict};

mod gpu_support;

#[test]
fn gpu_worker_entry() {
    gpu_support::serve_if_worker();
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// Tunes kernel `kernel` of `rel` as `kt tune FILE --test-size` would: the default block space, or the
/// template parameters over 128 and 256 with the restrictions the code implies.
fn tune_file(rel: &str, kernel: Option<&str>) -> TuneResult {
    let cu = repo(rel);
    let file = KernelFile::load(&cu, &[]).unwrap();
    let sidecar = kt_cuda::Sidecar::load(&sidecar_for(&cu, kernel).unwrap()).unwrap();
    let unit = file
        .select(Some(kernel.unwrap_or(&sidecar.kernel)))
        .unwrap();
    assert!(!unit.unit.text.contains("main("), "{rel}");
    let sk = SuiteKernel::from_unit(&file, &unit, &sidecar).unwrap();
    let templates = template_params(&unit.kernel);
    let (mut params, mut restrictions) = if templates.is_empty() {
        default_block_space(sidecar.problem_size.len())
    } else {
        let p: Vec<TunableParam> = templates
            .iter()
            .map(|(n, _)| TunableParam::new(n.clone(), [128, 256]))
            .collect();
        (p, vec![])
    };
    let derived = derive(&unit.kernel, &params);
    params.extend(derived.added_params.clone());
    restrictions.extend(derived.restrictions.iter().map(|r| r.expr.clone()));
    let args = template_args_for(&unit.kernel.name, &templates, &params, &BTreeMap::new()).unwrap();
    let mut sk = sk.with_params(params.clone());
    sk.kernel.template_args = args;
    if let Some(reference) = &mut sk.kernel.reference {
        derived.align_reference(reference);
    }
    let restrictions: Vec<Restriction> = restrictions.into_iter().map(Restriction::Expr).collect();
    sk.kernel.restrictions = restrictions.clone();
    sk.kernel.geometry.array_sizes = sk.inputs.config_dependent_sizes(&sk.params);
    let space = SearchSpace::build(&params, &restrictions, &Default::default(), None).unwrap();
    let tests = sk
        .inputs
        .make_tests_for(
            &sk.params,
            SizeChoice::Test,
            &BTreeMap::new(),
            1,
            &space.configs,
        )
        .unwrap();
    let mut tuner = gpu_support::tuner();
    let options = TuneOptions {
        measure_peak: false,
        ..TuneOptions::default()
    };
    tuner
        .tune(&sk.kernel, &tests, &options, &mut |_| {})
        .unwrap()
}

fn assert_tuned(rel: &str, r: &TuneResult) {
    for m in &r.measurements {
        assert!(
            !matches!(
                m.verdict,
                Verdict::WrongAnswer { .. }
                    | Verdict::CompileError { .. }
                    | Verdict::KernelNotFound { .. }
            ),
            "{rel} {}: {}",
            m.config,
            m.verdict.reason()
        );
    }
    assert!(r.best.is_some(), "{rel}: no configuration verified");
}

#[test]
#[ignore = "needs a GPU"]
fn whole_programs_headers_cooperative_groups_and_namespaces_tune_from_their_units() {
    for rel in [
        "tests/corpus/wild/vector_add_program.cu",
        "tests/corpus/wild/gelu_half.cu",
        "tests/corpus/wild/cg_reduce.cu",
        "tests/corpus/wild/stencil_main.cu",
        "tests/corpus/wild/namespace_saxpy.cu",
    ] {
        assert_tuned(rel, &tune_file(rel, None));
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_templated_block_size_is_tuned_with_the_block_following_it() {
    let rel = "tests/corpus/programs/sample-style/reduction.cu";
    let r = tune_file(rel, Some("reduce3"));
    assert_tuned(rel, &r);
    let configs: Vec<String> = r
        .measurements
        .iter()
        .map(|m| m.config.to_string())
        .collect();
    assert_eq!(r.space_size, 2, "{configs:?}");
    for m in &r.measurements {
        assert_eq!(m.config.get("blockSize"), m.config.get("block_size_x"));
    }
}
