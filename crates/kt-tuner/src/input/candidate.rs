//! `kt verify`'s two kernels: which kernel of each file is meant, and the candidate's launch when it has no
//! sidecar of its own (the reference's launch and inputs, the candidate's own code).

use std::path::{Path, PathBuf};

use crate::compile::kernel_file::KernelFile;
use crate::error::TunerError;
use crate::input::suite::sidecar_for;

use super::{LoadedKernel, SidecarChoice, load_kernel_with};

/// The candidate of a verification as the user names it.
#[derive(Debug, Clone, Copy)]
pub struct CandidateSpec<'a> {
    pub file: &'a Path,
    /// `--kernel`: default the reference's name when the candidate's file has it, else the file's only one.
    pub kernel: Option<&'a str>,
    /// `--candidate-sidecar`: default the sidecar beside the candidate when it is not the reference's.
    pub sidecar: Option<&'a Path>,
    pub include_dirs: &'a [PathBuf],
}

/// The reference's kernel name: `reference_kernel` when given, else `kernel` when the reference file has it
/// (None: the reference's sidecar or only kernel decides).
pub fn reference_kernel_name(
    file: &Path,
    reference_kernel: Option<&str>,
    kernel: Option<&str>,
    include_dirs: &[PathBuf],
) -> Option<String> {
    if let Some(k) = reference_kernel {
        return Some(k.to_string());
    }
    let k = kernel?;
    let has = KernelFile::load(file, include_dirs)
        .ok()
        .is_some_and(|f| f.parsed.kernels.iter().any(|x| x.name == k));
    has.then(|| k.to_string())
}

/// The candidate's kernel name: the one given, else the reference's when the candidate file has it.
fn candidate_kernel_name(
    spec: &CandidateSpec,
    reference: &str,
) -> Result<Option<String>, TunerError> {
    if let Some(k) = spec.kernel {
        return Ok(Some(k.to_string()));
    }
    let file = KernelFile::load(spec.file, spec.include_dirs)?;
    Ok(file
        .parsed
        .kernels
        .iter()
        .any(|k| k.name == reference)
        .then(|| reference.to_string()))
}

/// The candidate with its own launch: its sidecar's when it has one (not the reference's), else the
/// reference's launch and inputs with the candidate's code.
pub fn load_candidate(
    spec: CandidateSpec,
    reference: &LoadedKernel,
) -> Result<LoadedKernel, TunerError> {
    let name = candidate_kernel_name(&spec, &reference.kernel.kernel_name)?;
    let own = match spec.sidecar {
        Some(p) => Some(p.to_path_buf()),
        None => sidecar_for(spec.file, name.as_deref())
            .filter(|p| Some(p) != reference.sidecar.as_ref()),
    };
    if let Some(p) = &own {
        return load_kernel_with(
            spec.file,
            name.as_deref(),
            SidecarChoice::Given(p),
            spec.include_dirs,
        );
    }
    let own = load_kernel_with(
        spec.file,
        name.as_deref(),
        SidecarChoice::Without,
        spec.include_dirs,
    )?;
    let mut kernel = reference.kernel.clone();
    kernel.source = own.kernel.source;
    kernel.kernel_name = own.kernel.kernel_name;
    kernel.qualified_name = own.kernel.qualified_name;
    kernel.include_dirs = own.kernel.include_dirs;
    Ok(LoadedKernel {
        kernel,
        params: own.params,
        inputs: reference.inputs.clone(),
        default_block: reference.default_block,
        dims: reference.dims,
        parsed: own.parsed,
        sidecar: None,
        host_code_left_out: own.host_code_left_out,
        host_code_note: own.host_code_note,
        instantiations: own.instantiations,
        // the reference's launch is used, not the candidate file's
        host_launch_lines: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::load_kernel;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn version_two_of_a_file_takes_its_own_sidecar() {
        let file = root().join("tests/corpus/programs/bench-style/softmax_forward.cu");
        let name = reference_kernel_name(
            &file,
            Some("softmax_forward_kernel1"),
            Some("softmax_forward_kernel2"),
            &[],
        );
        let reference = load_kernel(&file, name.as_deref(), &[]).unwrap();
        assert_eq!(reference.kernel.kernel_name, "softmax_forward_kernel1");
        let spec = CandidateSpec {
            file: &file,
            kernel: Some("softmax_forward_kernel2"),
            sidecar: None,
            include_dirs: &[],
        };
        let cand = load_candidate(spec, &reference).unwrap();
        assert_eq!(cand.kernel.kernel_name, "softmax_forward_kernel2");
        assert!(
            cand.sidecar
                .as_ref()
                .unwrap()
                .ends_with("softmax_forward.softmax_forward_kernel2.toml")
        );
    }

    #[test]
    fn a_candidate_without_a_sidecar_takes_the_references_launch_and_inputs() {
        let file = root().join("naive-kernels/matrixAdd.cu");
        let reference = load_kernel(&file, None, &[]).unwrap();
        let spec = CandidateSpec {
            file: &file,
            kernel: None,
            sidecar: None,
            include_dirs: &[],
        };
        let cand = load_candidate(spec, &reference).unwrap();
        // the sidecar beside it is the reference's: not the candidate's own
        assert_eq!(cand.sidecar, None);
        assert_eq!(cand.default_block, reference.default_block);
        assert_eq!(
            cand.kernel.geometry.problem_size,
            reference.kernel.geometry.problem_size
        );
        assert!(cand.inputs.is_some());
    }

    #[test]
    fn the_kernel_flag_names_the_reference_only_where_its_file_has_it() {
        let file = root().join("naive-kernels/matrixAdd.cu");
        assert_eq!(
            reference_kernel_name(&file, None, Some("no_such_kernel"), &[]),
            None
        );
        let k = load_kernel(&file, None, &[]).unwrap().kernel.kernel_name;
        assert_eq!(
            reference_kernel_name(&file, None, Some(&k), &[]),
            Some(k.clone())
        );
    }
}
