//! The wild corpus (tests/corpus/wild/): CUDA written the way GPU programmers write it — whole programs,
//! user headers, kernels in a `.cuh`, templates, namespaces, half and bfloat16, cooperative groups. Every
//! file parses, agrees with its sidecar, and yields a device-only unit that parses back to its kernel.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use kt_cuda::{ItemKind, Kernel, KernelUnit, Sidecar, SourceFile, extract_unit, parse_source_file};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/wild")
}

fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus/wild exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    files.sort();
    files
}

/// The file's sidecar kernel and its unit.
fn load(name: &str) -> (Kernel, KernelUnit) {
    let path = corpus_dir().join(name);
    let file = SourceFile::load(&path, &[]).unwrap();
    let source = parse_source_file(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
    let sidecar = Sidecar::load(&Sidecar::path_for(&path)).unwrap();
    let kernel = source.select_kernel(Some(&sidecar.kernel)).unwrap().clone();
    let unit = extract_unit(&file, &kernel.name).unwrap_or_else(|e| panic!("{name}: {e}"));
    (kernel, unit)
}

#[test]
fn every_corpus_file_parses_matches_its_sidecar_and_gives_a_device_only_unit() {
    let files = corpus_files();
    assert!(files.len() >= 10, "corpus has {} files", files.len());
    let mut failures = Vec::new();
    for cu in &files {
        let name = cu.file_name().unwrap().to_string_lossy().to_string();
        let (kernel, unit) = load(&name);
        let sidecar = Sidecar::load(&Sidecar::path_for(cu)).unwrap();
        if let Err(problems) = sidecar.check_against(&kernel) {
            failures.extend(problems.iter().map(|p| format!("{name}: {p}")));
        }
        if let Err(e) = kernel.check_by_value_params() {
            failures.push(format!("{name}: {e}"));
        }
        for host in [
            "int main",
            "cudaMalloc",
            "<<<",
            "CUDA_CHECK",
            "<stdio.h>",
            "<vector>",
        ] {
            if unit.text.contains(host) {
                failures.push(format!(
                    "{name}: the unit contains host code `{host}`:\n{}",
                    unit.text
                ));
            }
        }
        let reparsed = kt_cuda::parse(&unit.text).unwrap();
        if reparsed.select_kernel(Some(&kernel.name)).is_err() {
            failures.push(format!("{name}: the unit lost its kernel"));
        }
        // every pointer parameter has a dtype kt knows, so the tuner can marshal it
        for p in kernel.params.iter().filter(|p| p.is_pointer()) {
            if p.dtype.is_none() && p.base_type != "KeyIndex" {
                failures.push(format!("{name}: parameter {} has no dtype", p.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn half_kernels_resolve_floatx_from_the_user_header() {
    let (kernel, unit) = load("layernorm_half.cu");
    assert_eq!(
        kernel.param("out").unwrap().dtype.as_deref(),
        Some("float16")
    );
    assert_eq!(
        kernel.param("mean").unwrap().dtype.as_deref(),
        Some("float32")
    );
    assert!(
        kernel
            .restrictions
            .iter()
            .any(|r| r.expr == "block_size_x % 32 == 0")
    );
    // the header's typedef, macro and helper are inlined; its host macro and stdio are not
    assert!(unit.text.contains("typedef half floatX;"), "{}", unit.text);
    assert!(unit.text.contains("#define WARP_SIZE 32"), "{}", unit.text);
    assert!(
        unit.text.contains("__device__ inline float warp_sum"),
        "{}",
        unit.text
    );
    assert!(
        unit.text.starts_with("#include <cuda_fp16.h>\n"),
        "{}",
        unit.text
    );
    let from_header: Vec<&str> = unit
        .items
        .iter()
        .filter(|i| i.origin_file.ends_with("common.h"))
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        from_header,
        vec!["cuda_fp16.h", "floatX", "WARP_SIZE", "warp_sum"]
    );
    let (gelu, gelu_unit) = load("gelu_half.cu");
    assert_eq!(gelu.param("inp").unwrap().base_type, "half");
    assert!(!gelu_unit.text.contains("ceil_div"), "{}", gelu_unit.text);
}

#[test]
fn a_kernel_in_a_cuh_is_found_and_says_where_it_came_from() {
    let (kernel, unit) = load("stencil_main.cu");
    assert!(
        kernel
            .origin_file
            .as_deref()
            .unwrap()
            .ends_with("stencil.cuh")
    );
    assert_eq!(kernel.span.start.line, 7);
    assert!(unit.text.contains("#define RADIUS 3"));
    assert!(unit.dropped_host_items.iter().any(|i| i.name == "main"));
}

#[test]
fn templates_namespaces_bf16_float3_and_aligned_structs_are_read() {
    let (reduce, _) = load("reduce_template.cu");
    assert_eq!(reduce.tunable_template_params, vec!["blockSize"]);
    assert!(
        reduce.launch_assumptions.is_empty(),
        "{:?}",
        reduce.launch_assumptions
    );
    assert!(
        reduce
            .restrictions
            .iter()
            .any(|r| r.expr == "block_size_x == blockSize")
    );

    let (saxpy, unit) = load("namespace_saxpy.cu");
    assert_eq!(saxpy.name_expression(&[]).as_deref(), Some("&blas::saxpy"));
    assert!(
        unit.text.contains("namespace blas {") && unit.text.contains("fma_op"),
        "{}",
        unit.text
    );
    assert!(!unit.text.contains("run_saxpy") && !unit.text.contains("cuda_runtime.h"));

    let (bf16, _) = load("residual_bf16.cu");
    assert!(
        bf16.params[..3]
            .iter()
            .all(|p| p.dtype.as_deref() == Some("bfloat16"))
    );

    let (particles, unit) = load("particles_float3.cu");
    assert_eq!(
        particles.param("pos").unwrap().dtype.as_deref(),
        Some("float32x3")
    );
    assert_eq!(
        unit.items
            .iter()
            .filter(|i| i.kind == ItemKind::DeviceFunction)
            .count(),
        2
    );

    let path = corpus_dir().join("aligned_pairs.cu");
    let source = parse_source_file(&SourceFile::load(&path, &[]).unwrap()).unwrap();
    assert_eq!(source.kernel_names(), vec!["make_pairs", "pair_keys"]);
    assert!(
        source.syntax_problems.is_empty(),
        "{:?}",
        source.syntax_problems
    );
}

#[test]
fn cooperative_groups_syncs_count_as_barriers() {
    let (kernel, unit) = load("cg_reduce.cu");
    let f = &kernel.features;
    assert!(f.uses_cooperative_groups && f.uses_syncthreads);
    assert_eq!((f.barriers, f.warp_barriers), (2, 0));
    assert!(
        kernel
            .restrictions
            .iter()
            .any(|r| r.expr == "block_size_x % 32 == 0")
    );
    assert!(
        unit.text.contains("namespace cg = cooperative_groups;"),
        "{}",
        unit.text
    );
    assert!(
        unit.text.contains("#include <cooperative_groups.h>"),
        "{}",
        unit.text
    );
}

#[test]
fn the_new_kernel_goes_back_into_a_copy_of_the_whole_program() {
    let path = corpus_dir().join("vector_add_program.cu");
    let file = SourceFile::load(&path, &[]).unwrap();
    let unit = extract_unit(&file, "vectorAdd").unwrap();
    let faster = unit.text.replace(
        "int i = blockDim.x * blockIdx.x + threadIdx.x;",
        "int i = blockDim.x * blockIdx.x + threadIdx.x; // tuned",
    );
    let program = kt_cuda::splice_kernel_into_file(&file, "vectorAdd", &faster).unwrap();
    assert!(program.contains("// tuned"));
    assert_eq!(program.replace(" // tuned", ""), file.text);
}
