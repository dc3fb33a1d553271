//! A CUDA file as the tuner compiles it: the file read with its user headers followed (its own directory
//! first, then the `--include` directories), one kernel chosen, and that kernel's own compilation unit
//! (kt-cuda's `extract_unit`) as the source NVRTC gets. Host code — `main`, `cudaMalloc`, `<<<…>>>`
//! launches, error-check macros — never reaches NVRTC, and the user's file is never changed. Every caller
//! that compiles a user's kernel (`kt tune`, `kt verify`, the pipeline's reference run and candidates)
//! goes through [`KernelSource`].

use std::path::{Path, PathBuf};

use crate::error::TunerError;
use crate::model::tunable_kernel::TunableKernel;

/// A CUDA file with its headers followed and its kernels parsed, before one is chosen.
#[derive(Debug, Clone)]
pub struct KernelFile {
    pub file: kt_cuda::SourceFile,
    pub parsed: kt_cuda::CudaSource,
    /// Where NVRTC looks for headers: the file's directory, then the given ones.
    pub include_dirs: Vec<PathBuf>,
}

/// One kernel of a file, ready to compile: its parsed description and its unit.
#[derive(Debug, Clone)]
pub struct KernelSource {
    /// The file's name as the user gave it (for messages).
    pub file_name: String,
    pub kernel: kt_cuda::Kernel,
    pub unit: kt_cuda::KernelUnit,
    pub include_dirs: Vec<PathBuf>,
}

/// The directory a file's own `#include "…"` are looked up in.
pub fn file_dir(path: &Path) -> PathBuf {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

impl KernelFile {
    /// Reads `path` and follows its user headers through its directory and `include_dirs`.
    pub fn load(path: &Path, include_dirs: &[PathBuf]) -> Result<Self, TunerError> {
        let file = kt_cuda::SourceFile::load(path, include_dirs).map_err(source_error)?;
        let mut dirs = vec![file_dir(path)];
        dirs.extend(include_dirs.iter().cloned());
        Self::parse(file, dirs)
    }

    /// A source that is not a file on disk (a candidate's text): `include_dirs` are searched for its headers,
    /// the directory it stands for (the original file's) first.
    pub fn from_text(name: &str, text: &str, include_dirs: &[PathBuf]) -> Result<Self, TunerError> {
        let file = kt_cuda::SourceFile::from_text(name, text, include_dirs);
        Self::parse(file, include_dirs.to_vec())
    }

    fn parse(file: kt_cuda::SourceFile, include_dirs: Vec<PathBuf>) -> Result<Self, TunerError> {
        let parsed = kt_cuda::parse_source_file(&file).map_err(source_error)?;
        Ok(KernelFile {
            file,
            parsed,
            include_dirs,
        })
    }

    /// The first `#include "…"` that is not found and stops a compile, as nvcc would stop: one the file itself
    /// makes. Not one that sits in a branch for a macro no file defines (nvcc never opens it), not a system
    /// header written with quotes (`#include "cuda.h"`: nvcc finds it on its system path, kt answers it), and
    /// not one made by another header (a generated `config.h` of a library's configure step): those are
    /// reported once and the compile goes on, its errors then name what is missing.
    fn blocking_missing_header(&self) -> Option<&kt_cuda::IncludeRecord> {
        let defined = |m: &str| self.parsed.defines.iter().any(|d| d.name == m);
        let builtin = crate::compile::headers::builtin_headers();
        let mut blocking = None;
        for missing in self
            .file
            .includes
            .iter()
            .filter(|i| !i.system && i.resolved.is_none())
        {
            if let Some(m) = &missing.requires_macro
                && !defined(m)
            {
                continue;
            }
            if builtin.iter().any(|(name, _)| *name == missing.header) {
                continue;
            }
            if missing.from_file != self.file.name {
                tracing::warn!(
                    "{}:{}: #include \"{}\" was not found; kt goes on without it (if the compile then fails \
                     on a name it defines, add its directory with --include DIR)",
                    missing.from_file,
                    missing.line,
                    missing.header
                );
                continue;
            }
            blocking = blocking.or(Some(missing));
        }
        blocking
    }

    /// The kernel named `kernel` (or the file's only one) with its unit. Errors name the file and say what
    /// to do: no kernel, several and none chosen, a name the file lacks, and a user header the file
    /// includes that is in none of the include directories (nvcc would stop there too, and kt cannot tell
    /// what the header would have given the kernel).
    pub fn select(&self, kernel: Option<&str>) -> Result<KernelSource, TunerError> {
        let k = self
            .parsed
            .select_kernel_in(kernel, &self.file.name)
            .map_err(source_error)?
            .clone();
        if let Some(missing) = self.blocking_missing_header() {
            let dirs: Vec<String> = self
                .include_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            return Err(TunerError::Source(format!(
                "{}:{}: #include \"{}\" was not found (searched: {}); kernel `{}` may need what it \
                 defines, so kt cannot compile it: add the header's directory with --include DIR",
                missing.from_file,
                missing.line,
                missing.header,
                dirs.join(", "),
                k.name
            )));
        }
        let unit = kt_cuda::extract_unit(&self.file, &k.name).map_err(source_error)?;
        Ok(KernelSource {
            file_name: self.file.name.clone(),
            kernel: k,
            unit,
            include_dirs: self.include_dirs.clone(),
        })
    }
}

/// `file`'s kernel `kernel` (or its only one) as the source to compile, its headers looked up in the
/// file's directory and `include_dirs`: the one call that turns "a CUDA file + kernel name + include dirs"
/// into a [`TunableKernel`]'s source (see [`KernelSource::tunable_code`]).
pub fn kernel_source(
    file: &Path,
    kernel: Option<&str>,
    include_dirs: &[PathBuf],
) -> Result<KernelSource, TunerError> {
    KernelFile::load(file, include_dirs)?.select(kernel)
}

impl KernelSource {
    /// Refuses a kernel that takes a struct by value (the thesis's `matMulNaiveKernel(Matrix A, Matrix B,
    /// Matrix C)`): kt-cuda computes its layout, but neither a sidecar nor a tests directory can give a
    /// struct's value yet, so this says what is missing and how to go on instead of a list of sidecar
    /// mismatches. `file` is the file as the user named it.
    pub fn refuse_struct_by_value(&self, file: &Path) -> Result<(), TunerError> {
        let kernel = &self.kernel;
        // a value of a template type (`T v`) is a scalar once `--template T=float` or the sidecar names T
        let template_type = |text: &str| {
            kernel
                .template_params
                .iter()
                .any(|t| matches!(t.kind.as_str(), "typename" | "class") && t.name == text.trim())
        };
        let Some(p) = kernel
            .params
            .iter()
            .find(|p| !p.is_pointer() && p.dtype.is_none() && !template_type(&p.type_text))
        else {
            return Ok(());
        };
        let layout = p
            .layout
            .as_ref()
            .map(|l| format!(" ({} bytes, CUDA layout known)", l.size))
            .unwrap_or_default();
        Err(TunerError::Source(format!(
            "{}: kernel `{}` takes `{}` of type `{}` by value{layout}: kt cannot make inputs for a struct \
             argument yet (a sidecar or tests directory gives arrays and scalars only). Pass its fields as \
             parameters instead (for a matrix: `float* {n}_elements, int {n}_width, int {n}_height`), then tune \
             that kernel",
            file.display(),
            kernel.name,
            p.name,
            p.type_text,
            n = p.name
        )))
    }

    /// A `TunableKernel` that compiles the unit: the kernel's name (qualified when it is in a namespace),
    /// the include directories, and `problem_size`; parameters, launch and tests are the caller's.
    pub fn tunable_code(&self, problem_size: Vec<String>) -> TunableKernel {
        let mut k = TunableKernel::new("", "", problem_size);
        k.geometry.divide_by_kernel_tiles(&self.kernel);
        self.compile_as(&mut k);
        k
    }

    /// Makes `k` compile this kernel (source, name, qualified name, include directories), keeping its
    /// parameters, launch and tests: for a `TunableKernel` built from a sidecar.
    pub fn compile_as(&self, k: &mut TunableKernel) {
        k.source = self.unit.text.clone();
        k.kernel_name = self.kernel.name.clone();
        k.qualified_name = (!self.kernel.qualified_name.is_empty()
            && self.kernel.qualified_name != self.kernel.name)
            .then(|| self.kernel.qualified_name.clone());
        k.include_dirs = self.include_dirs.clone();
    }

    /// The host code left out of the unit, for a one-line note (None when there was none): `main`, host
    /// functions and variables. Other kernels and unused helpers are left out too, but are not host code.
    pub fn host_code_dropped(&self) -> Vec<&kt_cuda::UnitItem> {
        self.unit
            .dropped_host_items
            .iter()
            .filter(|i| i.kind.is_host())
            .collect()
    }

    /// One line saying what was left out of the file, or None when nothing of the host program was and
    /// every header was found.
    pub fn host_code_note(&self) -> Option<String> {
        let host = self.host_code_dropped();
        let missing = (!self.unit.missing_includes.is_empty()).then(|| {
            let dirs: Vec<String> = self
                .include_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            format!(
                "{}: #include {} not found (searched: {}), left out of kernel `{}`'s unit; if the kernel needs what it defines, add its directory with --include DIR",
                self.file_name,
                self.unit
                    .missing_includes
                    .iter()
                    .map(|h| format!("\"{h}\""))
                    .collect::<Vec<_>>()
                    .join(", "),
                dirs.join(", "),
                self.kernel.name
            )
        });
        if host.is_empty() {
            return missing;
        }
        let mut names: Vec<&str> = host.iter().map(|i| i.name.as_str()).collect();
        names.dedup();
        let shown = names.iter().take(6).copied().collect::<Vec<_>>().join(", ");
        let more = if names.len() > 6 { ", …" } else { "" };
        let host_line = format!(
            "{}: compiling kernel `{}`'s own unit ({} items); host code left out: {shown}{more} (the file is unchanged)",
            self.file_name,
            self.kernel.name,
            self.unit.items.len()
        );
        Some(match missing {
            Some(m) => format!("{host_line}\nnote: {m}"),
            None => host_line,
        })
    }
}

fn source_error(e: kt_cuda::CudaError) -> TunerError {
    TunerError::Source(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel)
    }

    #[test]
    fn a_whole_program_compiles_as_its_kernels_unit_without_host_code() {
        let src =
            kernel_source(&repo("tests/corpus/wild/vector_add_program.cu"), None, &[]).unwrap();
        let k = src.tunable_code(vec!["n".into()]);
        assert!(
            !k.source.contains("main(") && !k.source.contains("<<<"),
            "{}",
            k.source
        );
        assert!(k.source.contains("__global__"));
        assert_eq!(k.include_dirs, vec![repo("tests/corpus/wild")]);
        let note = src.host_code_note().unwrap();
        assert!(
            note.contains("main") && note.contains("unchanged"),
            "{note}"
        );
    }

    #[test]
    fn missing_headers_nvcc_would_never_open_or_that_a_header_makes_do_not_stop_the_compile() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("timer.h"),
            "#pragma once\n#include \"config.h\"\n",
        )
        .unwrap();
        let cu = dir.path().join("k.cu");
        std::fs::write(
            &cu,
            "#include \"cuda.h\"\n#include \"timer.h\"\n#ifdef PAPI\n#include \"papi.list\"\n#endif\n\
             __global__ void k(float *a) { a[0] = 1; }\n",
        )
        .unwrap();
        assert!(kernel_source(&cu, None, &[]).is_ok());
        // the same branch with its macro defined is a header nvcc would open: an error again
        let text = std::fs::read_to_string(&cu).unwrap();
        std::fs::write(&cu, format!("#define PAPI\n{text}")).unwrap();
        let err = kernel_source(&cu, None, &[]).unwrap_err().to_string();
        assert!(err.contains("\"papi.list\" was not found"), "{err}");
    }

    #[test]
    fn a_value_of_a_template_type_is_a_scalar_but_a_struct_value_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cu = dir.path().join("k.cu");
        std::fs::write(
            &cu,
            "template <class T> __global__ void add(T *d, T v) { d[0] += v; }\n\
             struct M { int w; float *e; };\n__global__ void mat(M m) { m.e[0] = 0; }\n",
        )
        .unwrap();
        let add = kernel_source(&cu, Some("add"), &[]).unwrap();
        assert!(add.refuse_struct_by_value(&cu).is_ok());
        let mat = kernel_source(&cu, Some("mat"), &[]).unwrap();
        let err = mat.refuse_struct_by_value(&cu).unwrap_err().to_string();
        assert!(err.contains("`m` of type `M` by value"), "{err}");
    }

    #[test]
    fn a_namespaced_kernel_is_named_by_its_qualified_name() {
        let src = kernel_source(&repo("tests/corpus/wild/namespace_saxpy.cu"), None, &[]).unwrap();
        let k = src.tunable_code(vec![]);
        let e = k.name_expression(&crate::model::space::Config(vec![]));
        assert!(e.contains("::saxpy"), "{e}");
    }

    #[test]
    fn a_kernel_in_an_included_header_is_found_through_the_files_directory() {
        let src = kernel_source(&repo("tests/corpus/wild/stencil_main.cu"), None, &[]).unwrap();
        assert!(src.unit.text.contains("__global__"));
        assert!(!src.unit.text.contains("main("));
    }

    #[test]
    fn a_missing_user_header_names_the_file_the_header_and_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let cu = dir.path().join("k.cu");
        std::fs::write(
            &cu,
            "#include \"defs.h\"\n__global__ void k(float *a) { a[0] = SCALE; }\n",
        )
        .unwrap();
        let err = kernel_source(&cu, None, &[]).unwrap_err().to_string();
        assert!(
            err.contains("k.cu:1") && err.contains("\"defs.h\"") && err.contains("--include DIR"),
            "{err}"
        );
        let inc = tempfile::tempdir().unwrap();
        std::fs::write(inc.path().join("defs.h"), "#define SCALE 2.0f\n").unwrap();
        let src = kernel_source(&cu, None, &[inc.path().to_path_buf()]).unwrap();
        assert!(
            src.unit.text.contains("#define SCALE 2.0f"),
            "{}",
            src.unit.text
        );
    }

    #[test]
    fn two_kernels_without_a_choice_and_no_kernel_at_all_are_clear_errors() {
        let two = KernelFile::from_text(
            "two.cu",
            "__global__ void a(float *x) {}\n__global__ void b(float *x) {}\n",
            &[],
        )
        .unwrap();
        let err = two.select(None).unwrap_err().to_string();
        assert!(err.contains("two.cu") && err.contains("--kernel"), "{err}");
        assert_eq!(two.select(Some("b")).unwrap().kernel.name, "b");
        let none = KernelFile::from_text("none.cu", "int main() { return 0; }\n", &[])
            .and_then(|f| f.select(None).map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(
            none.contains("none.cu") && none.contains("__global__"),
            "{none}"
        );
    }
}
