use std::collections::BTreeMap;

use super::pair::{candidate_with_overrides, parse_block, reference_name};
use super::report::describe_tests;
use super::test_plan::DefaultTests;
use super::*;
use clap::Parser;
use kt_tuner::input::{TestSource, load_kernel, load_tests};
use kt_tuner::model::args::SizeChoice;
use kt_tuner::session::config_from_block;
use std::path::Path;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: VerifyArgs,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn args(extra: &[&str]) -> VerifyArgs {
    let mut argv = vec!["verify"];
    argv.extend_from_slice(extra);
    Cli::parse_from(argv).args
}

#[test]
fn the_default_tests_add_an_odd_inner_dimension_unless_seeds_only() {
    let file = root().join("naive-kernels/matmul.cu");
    let reference = load_kernel(&file, None, &[]).unwrap();
    let inputs = reference.inputs.as_ref().unwrap();
    let configs = [config_from_block(&[], [16, 16, 1])];
    let extras = DefaultTests {
        inputs: Some(inputs),
        reference: &reference,
        base: Some(inputs.values_at(SizeChoice::Test, &BTreeMap::new())),
        configs: &configs,
        next_seed: 4,
    };
    let odd = extras.odd().unwrap().unwrap();
    // the seeded tests' inner dimension is even (100): the odd test's is not
    assert_eq!(odd.test.scalars()["A_width"], 101.0);
    let source = TestSource::Generate {
        size: SizeChoice::Test,
        count: 3,
    };
    let mut tests = load_tests(&reference, source, &BTreeMap::new(), &configs).unwrap();
    tests.tests.push(odd.test);
    assert!(extras.warnings(&tests).is_empty());
    assert_eq!(
        describe_tests(&tests, &[odd.description]),
        "gen1, gen2, gen3; odd (next primes): A_width=101 A_height=79 B_width=97"
    );
    let seeds_only = DefaultTests {
        inputs: None,
        ..extras
    };
    assert!(seeds_only.odd().unwrap().is_none());
}

#[test]
fn a_block_flag_takes_one_to_three_sizes() {
    assert_eq!(parse_block("16,16").unwrap(), [16, 16, 1]);
    assert!(parse_block("1,2,3,4").is_err());
    assert!(parse_block("x").is_err());
}

#[test]
fn version_two_of_a_file_is_checked_against_version_one_with_its_own_launch() {
    let file = root().join("tests/corpus/programs/bench-style/softmax_forward.cu");
    let f = file.to_string_lossy().to_string();
    let a = args(&[
        &f,
        &f,
        "--reference-kernel",
        "softmax_forward_kernel1",
        "--kernel",
        "softmax_forward_kernel2",
    ]);
    let reference = load_kernel(&a.reference, reference_name(&a).as_deref(), &[]).unwrap();
    assert_eq!(reference.kernel.kernel_name, "softmax_forward_kernel1");
    let (cand, config, _) = candidate_with_overrides(&a, &reference).unwrap();
    // Its own sidecar is found by kt-tuner's `load_candidate` (and tested there); its launch is seen here.
    assert_eq!(cand.kernel.kernel_name, "softmax_forward_kernel2");
    assert_eq!(
        cand.kernel.geometry.shared_mem.as_deref(),
        Some("block_size_x * 4")
    );
    let scalars = BTreeMap::from([("N".to_string(), 37.0), ("C".to_string(), 1001.0)]);
    let dims = cand.kernel.geometry.launch(&config, &scalars).unwrap();
    assert_eq!(
        (dims.block, dims.grid, dims.shared_mem),
        ([256, 1, 1], [37, 1, 1], 1024)
    );
}

#[test]
fn launch_flags_override_the_candidates_launch() {
    let file = root().join("naive-kernels/matrixAdd.cu");
    let f = file.to_string_lossy().to_string();
    let a = args(&[
        &f,
        &f,
        "--block",
        "32,8",
        "--param",
        "block_size_y=4",
        "--shared-mem",
        "block_size_x*8",
    ]);
    let reference = load_kernel(&a.reference, None, &[]).unwrap();
    let (cand, config, _) = candidate_with_overrides(&a, &reference).unwrap();
    assert_eq!(config.get("block_size_x"), Some(32));
    assert_eq!(config.get("block_size_y"), Some(4));
    assert_eq!(
        cand.kernel.geometry.shared_mem.as_deref(),
        Some("block_size_x*8")
    );
    // same signature: the tests' arguments as they are
    assert_eq!(cand.kernel.arguments, None);
}

#[test]
fn the_reductions_output_follows_the_candidates_block_size() {
    let file = root().join("naive-kernels/reduce_sum.cu");
    let f = file.to_string_lossy().to_string();
    let a = args(&[&f, &f, "--param", "block_size_x=128"]);
    let mut reference = load_kernel(&a.reference, None, &[]).unwrap();
    reference.size_arrays_per_configuration();
    let (cand, config, _) = candidate_with_overrides(&a, &reference).unwrap();
    assert_eq!(config.get("block_size_x"), Some(128));
    assert_eq!(
        cand.kernel
            .geometry
            .array_sizes
            .get("output")
            .map(String::as_str),
        Some("ceil_div(n, block_size_x)")
    );
    let configs = [config_from_block(&[], [256, 1, 1]), config];
    let source = TestSource::Generate {
        size: SizeChoice::Test,
        count: 1,
    };
    let tests = load_tests(&reference, source, &BTreeMap::new(), &configs).unwrap();
    let out = tests.tests[0]
        .arrays()
        .find(|a| a.name == "output")
        .unwrap();
    assert_eq!(out.elements, 10007u64.div_ceil(128));
}

#[test]
fn template_values_come_from_the_files_own_launches_when_none_is_given() {
    let file = root().join("tests/corpus/real-world-classes/host_instances.cu");
    let f = file.to_string_lossy().to_string();
    let a = args(&[&f, &f]);
    let pair = super::pair::load_pair(&a).unwrap();
    // T from the one launch that names a type; blockSize the sidecar's block (128), not the first launched
    assert_eq!(
        pair.reference.kernel.template_args,
        ["float", "128", "true"]
    );
    assert_eq!(
        pair.candidate.kernel.template_args,
        ["float", "128", "true"]
    );
    // the user's value wins
    let a = args(&[&f, &f, "--template", "blockSize=64"]);
    let pair = super::pair::load_pair(&a).unwrap();
    assert_eq!(pair.reference.kernel.template_args, ["float", "64", "true"]);
}

#[test]
fn saxpys_plan_varies_a_and_a_derived_test_the_reference_fails_on_is_left_out_with_a_note() {
    let file = root().join("naive-kernels/saxpy.cu");
    let f = file.to_string_lossy().to_string();
    let a = args(&[&f, &f]);
    let pair = super::pair::load_pair(&a).unwrap();
    let configs = [pair.ref_config.clone(), pair.cand_config.clone()];
    let (mut planned, _) =
        super::test_plan::tests_before_gpu(&a, &pair, &BTreeMap::new(), &configs).unwrap();
    let ids: Vec<&str> = planned.tests.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "gen1",
            "gen2",
            "gen3",
            "odd",
            "large-values",
            "varied-scalars"
        ]
    );
    let varied = &planned.tests.tests[5];
    assert_eq!(varied.scalars()["a"] as f32, 1.160_660_1);
    assert_eq!(
        describe_tests(&planned.tests, &planned.described),
        "gen1, gen2, gen3; odd (next primes): n=10009; large-values: x drawn with standard deviation 100 \
         (compared where the reference is finite); varied-scalars: a 1.5 -> 1.1606601 (values the sidecar \
         never gives)"
    );
    // only derived tests are run alone first: a reference that passes them keeps them
    let mut asked = Vec::new();
    let notes = planned
        .drop_derived_where(|t| {
            asked.push(t.id.clone());
            Ok(None)
        })
        .unwrap();
    assert!(notes.is_empty());
    assert_eq!(asked, ["varied-scalars"]);
    assert_eq!(planned.tests.tests.len(), 6);
    // a test the reference ran right on is not run alone again (the device-sized ones are probed later)
    let mut asked_again = 0;
    planned
        .drop_derived_where(|_| {
            asked_again += 1;
            Ok(None)
        })
        .unwrap();
    assert_eq!(asked_again, 0);
    // one the reference fails on is left out, test and description, and the note says why
    let mut planned = super::test_plan::tests_before_gpu(&a, &pair, &BTreeMap::new(), &configs)
        .unwrap()
        .0;
    let notes = planned
        .drop_derived_where(|_| Ok(Some("it wrote 4 bytes past the end of `y`".into())))
        .unwrap();
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].starts_with("the varied-scalars: a 1.5 -> 1.1606601")
            && notes[0].contains("left out: the reference fails there (it wrote 4 bytes past")
            && notes[0].contains("ones the sidecar never gives"),
        "{}",
        notes[0]
    );
    assert_eq!(planned.tests.tests.len(), 5);
    assert!(!planned.described.iter().any(|d| d.contains("varied")));
    // and an error running it (the reference does not compile) is the verification's
    let mut again = super::test_plan::tests_before_gpu(&a, &pair, &BTreeMap::new(), &configs)
        .unwrap()
        .0;
    assert!(
        again
            .drop_derived_where(|_| Err(anyhow::anyhow!("compile error")))
            .is_err()
    );
}

#[test]
fn the_histogram_gets_a_skewed_test_and_seeds_only_none() {
    let planned = planned("histogram", &[]);
    assert!(
        planned
            .described
            .contains(&"skewed: data all 0 (instead of randint:0:256)".to_string()),
        "{:?}",
        planned.described
    );
    let planned = self::planned("histogram", &["--seeds-only"]);
    assert_eq!(planned.tests.tests.len(), 3);
    assert!(planned.described.is_empty());
}

#[test]
fn a_test_the_gpu_has_no_room_for_is_left_out_by_id() {
    let mut planned = planned("histogram", &[]);
    let before = planned.tests.tests.len();
    assert_eq!(planned.leave_out("past-2GiB"), None);
    let skewed = planned.leave_out("skewed").unwrap();
    assert_eq!(skewed, "skewed: data all 0 (instead of randint:0:256)");
    assert_eq!(planned.tests.tests.len(), before - 1);
    assert!(!planned.described.contains(&skewed));
    assert_eq!(planned.leave_out("skewed"), None);
    // what the tuner says when the GPU is full, read through the context the CLI adds
    let full = kt_tuner::TunerError::on_test(
        "past-2GiB",
        "allocating a (2147483692 bytes): CUDA_ERROR_OUT_OF_MEMORY".into(),
        kt_tuner::TunerError::Arguments,
    );
    let e = anyhow::Error::new(full).context("verifying");
    assert_eq!(super::no_room_for(&e), Some("past-2GiB"));
    assert_eq!(super::no_room_for(&anyhow::anyhow!("compile error")), None);
}

/// The tests planned before a GPU for `naive-kernels/KERNEL.cu` verified against itself, with `extra` flags.
fn planned(kernel: &str, extra: &[&str]) -> super::test_plan::Planned {
    let f = root()
        .join(format!("naive-kernels/{kernel}.cu"))
        .to_string_lossy()
        .to_string();
    let a = args(&[&[f.as_str(), f.as_str()], extra].concat());
    let pair = super::pair::load_pair(&a).unwrap();
    let configs = [pair.ref_config.clone(), pair.cand_config.clone()];
    super::test_plan::tests_before_gpu(&a, &pair, &BTreeMap::new(), &configs)
        .unwrap()
        .0
}
