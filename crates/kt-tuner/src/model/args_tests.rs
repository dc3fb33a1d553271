//! Unit tests of args.rs.

use super::*;

fn matmul_params() -> Vec<ParamSpec> {
    let f = Some((DType::Float32, 1));
    let i = Some((DType::Int32, 1));
    vec![
        ParamSpec {
            name: "A".into(),
            is_pointer: true,
            dtype: f,
        },
        ParamSpec {
            name: "B".into(),
            is_pointer: true,
            dtype: f,
        },
        ParamSpec {
            name: "C".into(),
            is_pointer: true,
            dtype: f,
        },
        ParamSpec {
            name: "A_width".into(),
            is_pointer: false,
            dtype: i,
        },
        ParamSpec {
            name: "A_height".into(),
            is_pointer: false,
            dtype: i,
        },
        ParamSpec {
            name: "B_width".into(),
            is_pointer: false,
            dtype: i,
        },
    ]
}

const SIDECAR: &str = r#"
outputs = ["C"]
bench = { A_width = 4096, A_height = 4096, B_width = 4096 }
test = { A_width = 100, A_height = 77, B_width = 93 }
inputs = { A = "randn", B = "randn", C = "zeros" }
dtypes = { A = "float32", B = "float32", C = "float32" }
sizes = { A = "A_width*A_height", B = "A_width*B_width", C = "A_height*B_width" }
rtol = { C = 1e-4 }
"#;

#[test]
fn sidecar_makes_typed_tests_at_the_chosen_size() {
    let s: SuiteInputs = toml::from_str(SIDECAR).unwrap();
    let set = s
        .make_tests(&matmul_params(), SizeChoice::Test, &BTreeMap::new(), 2)
        .unwrap();
    assert_eq!(set.tests.len(), 2);
    let t = &set.tests[0];
    let c = t.arrays().find(|a| a.name == "C").unwrap();
    assert_eq!(c.elements, 77 * 93);
    assert!(c.is_output);
    assert_eq!(t.scalars()["A_width"], 100.0);
    assert_eq!(t.tolerances["C"].rtol, 1e-4);
    assert_ne!(set.tests[0].fingerprint(), set.tests[1].fingerprint());
}

#[test]
fn missing_scalar_value_names_the_flag_to_use() {
    let mut s: SuiteInputs = toml::from_str(SIDECAR).unwrap();
    s.test.remove("B_width");
    let err = s
        .make_tests(&matmul_params(), SizeChoice::Test, &BTreeMap::new(), 1)
        .unwrap_err();
    assert!(err.to_string().contains("--size B_width"), "{err}");
}

#[test]
fn tests_dir_is_read_and_checked_against_the_signature() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t0");
    std::fs::create_dir_all(t.join("args")).unwrap();
    for n in ["A", "B", "C"] {
        kt_record::tests_format::npy::write_npy(
            &t.join(format!("args/{n}.npy")),
            "<f4",
            &[2, 2],
            &[0u8; 16],
        )
        .unwrap();
    }
    let manifest = r#"{"format":1,"kernel":"matrixMultiply","seed":1,"args":[
        {"name":"A","kind":"array","dtype":"float32","shape":[2,2],"file":"args/A.npy"},
        {"name":"B","kind":"array","dtype":"float32","shape":[2,2],"file":"args/B.npy"},
        {"name":"C","kind":"array","dtype":"float32","shape":[2,2],"file":"args/C.npy"},
        {"name":"A_width","kind":"scalar","dtype":"int32","value":2},
        {"name":"A_height","kind":"scalar","dtype":"int32","value":2},
        {"name":"B_width","kind":"scalar","dtype":"int32","value":2}],
        "outputs":["C"],"problem_size":[2,2,1]}"#;
    std::fs::write(t.join("manifest.json"), manifest).unwrap();
    let set = TestSet::load_dir(dir.path(), &matmul_params(), &BTreeMap::new()).unwrap();
    assert_eq!(set.tests[0].id, "t0");
    assert!(set.tests[0].arrays().any(|a| a.name == "C" && a.is_output));

    let mut wrong = matmul_params();
    wrong[3].dtype = Some((DType::Int64, 1));
    let err = TestSet::load_dir(dir.path(), &wrong, &BTreeMap::new()).unwrap_err();
    assert!(err.to_string().contains("A_width"), "{err}");
}

fn reduction_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec {
            name: "input".into(),
            is_pointer: true,
            dtype: Some((DType::Float32, 1)),
        },
        ParamSpec {
            name: "output".into(),
            is_pointer: true,
            dtype: Some((DType::Float32, 1)),
        },
        ParamSpec {
            name: "n".into(),
            is_pointer: false,
            dtype: Some((DType::Int32, 1)),
        },
    ]
}

const REDUCTION: &str = r#"
outputs = ["output"]
bench = { n = 10007 }
inputs = { input = "randn", output = "zeros" }
dtypes = { input = "float32", output = "float32" }
sizes = { input = "n", output = "ceil_div(n, block_size_x)" }
"#;

#[test]
fn sizes_that_name_launch_parameters_are_allocated_at_their_largest() {
    let s: SuiteInputs = toml::from_str(REDUCTION).unwrap();
    let params = reduction_params();
    assert_eq!(
        s.config_dependent_sizes(&params),
        BTreeMap::from([(
            "output".to_string(),
            "ceil_div(n, block_size_x)".to_string()
        )])
    );
    let configs: Vec<Config> = [32, 256]
        .map(|b| Config::ints([("block_size_x", b)]))
        .into();
    let set = s
        .make_tests_for(&params, SizeChoice::Bench, &BTreeMap::new(), 1, &configs)
        .unwrap();
    let out = set.tests[0].arrays().find(|a| a.name == "output").unwrap();
    assert_eq!(out.elements, 10007u64.div_ceil(32));
    // without a space: Kernel Tuner's default block of 256
    let set = s
        .make_tests(&params, SizeChoice::Bench, &BTreeMap::new(), 1)
        .unwrap();
    let out = set.tests[0].arrays().find(|a| a.name == "output").unwrap();
    assert_eq!(out.elements, 10007u64.div_ceil(256));
}

#[test]
fn a_size_naming_an_unknown_parameter_says_how_to_give_it() {
    let mut s: SuiteInputs = toml::from_str(REDUCTION).unwrap();
    s.sizes
        .insert("output".into(), "ceil_div(n, tile_size)".into());
    let err = s
        .make_tests(&reduction_params(), SizeChoice::Bench, &BTreeMap::new(), 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tile_size") && err.contains("--param"),
        "{err}"
    );
}

#[test]
fn half_outputs_get_their_dtype_tolerance_unless_the_sidecar_sets_one() {
    let mut s: SuiteInputs = toml::from_str(REDUCTION).unwrap();
    s.dtypes.insert("output".into(), "bfloat16".into());
    assert_eq!(
        s.tolerances()["output"],
        Tolerance::for_dtype(DType::Bfloat16)
    );
    s.rtol.insert("output".into(), 0.5);
    let t = s.tolerances()["output"];
    assert_eq!(t.rtol, 0.5);
    assert_eq!(t.atol, Tolerance::for_dtype(DType::Bfloat16).atol);
    // no sidecar dtype: the kernel's `half*` parameter decides
    s.dtypes.clear();
    s.rtol.clear();
    let mut params = reduction_params();
    params[1].dtype = Some((DType::Float16, 1));
    assert_eq!(
        s.tolerances_for(&params)["output"],
        Tolerance::for_dtype(DType::Float16)
    );
}

#[test]
fn a_sidecars_compare_total_reaches_that_outputs_tolerance_and_only_its() {
    let sidecar = kt_cuda::Sidecar::from_toml(
        r#"
kernel = "partials"
description = "one partial sum per block in `sums`, a copy in `out`"
problem_size = ["n"]
outputs = ["sums", "out"]
default_block = [128, 1, 1]
bench = { n = 4096 }
inputs = { sums = "zeros", out = "zeros", in = "randn" }
dtypes = { sums = "float64" }
sizes = { sums = "n", out = "n", in = "n" }
flops = "n"
bytes = "16 * n"
rtol = { sums = 1e-8 }
compare = { sums = "total", out = "elements" }
"#,
        Path::new("partials.toml"),
    )
    .unwrap();
    let s = SuiteInputs::from_sidecar(&sidecar);
    let t = s.tolerances();
    assert!(t["sums"].total && !t["out"].total, "{t:?}");
    assert_eq!(t["sums"].rtol, 1e-8);
    assert_eq!(t["out"], Tolerance::default(), "`elements` is the default");
    let params: Vec<ParamSpec> = ["sums", "out", "in"]
        .map(|name| ParamSpec {
            name: name.into(),
            is_pointer: true,
            dtype: Some((DType::Float32, 1)),
        })
        .into_iter()
        .chain([ParamSpec {
            name: "n".into(),
            is_pointer: false,
            dtype: Some((DType::Int32, 1)),
        }])
        .collect();
    let tests = s
        .make_tests(&params, SizeChoice::Bench, &BTreeMap::new(), 1)
        .unwrap();
    assert!(tests.tests[0].tolerances["sums"].total);
    // the tolerance travels to the worker as JSON; an elementwise one writes no `total`
    let text = serde_json::to_string(&tests.tests[0].tolerances).unwrap();
    assert_eq!(text.matches("\"total\":true").count(), 1, "{text}");
    let back: BTreeMap<String, Tolerance> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, tests.tests[0].tolerances);
}

#[test]
fn bfloat16_tests_dir_files_hold_uint16_bits() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t0");
    std::fs::create_dir_all(t.join("args")).unwrap();
    kt_record::tests_format::npy::write_npy(&t.join("args/x.npy"), "<u2", &[4], &[0u8; 8]).unwrap();
    let manifest = r#"{"args":[{"name":"x","kind":"array","dtype":"bfloat16","file":"args/x.npy"}],
        "outputs":["x"]}"#;
    std::fs::write(t.join("manifest.json"), manifest).unwrap();
    let params = vec![ParamSpec {
        name: "x".into(),
        is_pointer: true,
        dtype: DType::from_c_type("__nv_bfloat16"),
    }];
    let set = TestSet::load_dir(dir.path(), &params, &BTreeMap::new()).unwrap();
    let x = set.tests[0].arrays().next().unwrap();
    assert_eq!((x.dtype, x.elements), (DType::Bfloat16, 4));
}

#[test]
fn distributions_parse() {
    assert_eq!(
        Distribution::parse("randint:0:256").unwrap(),
        Distribution::RandInt { lo: 0, hi: 256 }
    );
    assert!(Distribution::parse("randint:5:5").is_err());
    assert!(Distribution::parse("gauss").is_err());
}

#[test]
fn a_sidecars_constants_become_each_tests_constants_typed_by_the_declaration() {
    let src = "#define TAPS 5\n__constant__ float taps[TAPS];\n\
               extern \"C\" __global__ void conv(float *out, const float *in, int n) {\n\
               int i = threadIdx.x; float s = 0; for (int k = 0; k < TAPS; k++) s += taps[k] * in[i + k]; out[i] = s; }\n";
    let kernel = kt_cuda::parse(src).unwrap().kernels[0].clone();
    let sidecar = kt_cuda::Sidecar::from_toml(
        r#"
kernel = "conv"
description = "1-D convolution, filter in constant memory"
problem_size = ["n"]
outputs = ["out"]
default_block = [128, 1, 1]
bench = { n = 4096 }
inputs = { out = "zeros", in = "randn" }
constants = { taps = "randn" }
sizes = { out = "n", in = "n + 4" }
flops = "10 * n"
bytes = "8 * n"
"#,
        Path::new("conv.toml"),
    )
    .unwrap();
    let inputs = SuiteInputs::for_kernel(&sidecar, &kernel);
    let params = ParamSpec::from_kernel(&kernel);
    let tests = inputs
        .make_tests(&params, SizeChoice::Bench, &BTreeMap::new(), 2)
        .unwrap();
    let seeds: Vec<&ArraySource> = tests.tests.iter().map(|t| &t.constants[0].source).collect();
    assert_ne!(seeds[0], seeds[1], "each test its own filter");
    let c = &tests.tests[0].constants[0];
    assert_eq!(
        (c.name.as_str(), c.dtype, c.elements),
        ("taps", DType::Float32, None)
    );
    assert_ne!(tests.tests[0].fingerprint(), {
        let mut without = tests.tests[0].clone();
        without.constants.clear();
        without.fingerprint()
    });
}

#[test]
fn seeded_sizes_follow_the_size_rules_and_a_given_size_is_taken_as_given() {
    let mut s: SuiteInputs = toml::from_str(SIDECAR).unwrap();
    s.size_rules.insert(
        "A_width".into(),
        kt_cuda::SizeRule {
            multiple_of: Some(8),
            min: None,
        },
    );
    let at_test = s.values_at(SizeChoice::Test, &BTreeMap::new());
    assert_eq!(
        at_test["A_width"], 104.0,
        "100 moved to the next multiple of 8"
    );
    assert_eq!(
        at_test["A_height"], 77.0,
        "a size without a rule is unchanged"
    );
    let given = BTreeMap::from([("A_width".to_string(), 100.0)]);
    assert_eq!(s.values_at(SizeChoice::Test, &given)["A_width"], 100.0);
}
