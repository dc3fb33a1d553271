//! Stages 1 and 2 for one kernel file, as `kt analyze`, `kt testgen` and `kt transform` run them: read the
//! file, find its sidecar, take Stage 1 from the LLM (or the sidecar), compare with the sidecar, and make the
//! tests in a run directory with checkpoints in its `run.sqlite`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kt_graph::{CheckpointStore, MemoryStore, RunId, SqliteStore};
use kt_llm::{LlmClient, StructuredMode};
use kt_sandbox::{PythonRuntime, Sandbox};

use crate::error::PipelineError;
use crate::prompt::PromptLibrary;
use crate::stage1::{self, SidecarDisagreement, SidecarFacts, Stage1Deps, Stage1Outcome};
use crate::stage2::{self, ReferenceRunner, Stage2Deps, Stage2Options, Stage2Outcome};
use kt_record::RunDir;

/// A kernel file and the kernel chosen in it.
#[derive(Debug, Clone)]
pub struct KernelInput {
    pub path: PathBuf,
    /// The code every stage works on: the file as it is when it holds only the kernel's unit, else that unit
    /// (see [`Self::program`]).
    pub text: String,
    /// `--kernel`; None: the only kernel (or the sidecar's).
    pub kernel: Option<String>,
    /// The sidecar next to the file, when there is one.
    pub sidecar: Option<SidecarFacts>,
    /// The user's whole file when `text` is the kernel's unit cut out of it (the file had host code, other
    /// kernels or user headers); None when `text` is the file itself. The file itself is never changed.
    pub program: Option<String>,
    /// Where the file's `#include "…"` headers are looked up: its own directory, then `--include`.
    pub include_dirs: Vec<PathBuf>,
}

impl KernelInput {
    /// The file at `path`, its user headers looked up in its own directory only.
    pub fn read(path: &Path, kernel: Option<&str>) -> Result<KernelInput, PipelineError> {
        Self::read_with_includes(path, kernel, &[])
    }

    /// The file at `path` with its kernel's unit cut out when the file holds more (a whole program); user
    /// headers are looked up in the file's directory, then in `include_dirs`.
    pub fn read_with_includes(
        path: &Path,
        kernel: Option<&str>,
        include_dirs: &[PathBuf],
    ) -> Result<KernelInput, PipelineError> {
        let bytes = std::fs::read(path)
            .map_err(|e| PipelineError::io("reading the kernel file", path, e))?;
        let text = kt_cuda::decode(&bytes, &path.display().to_string())?;
        let sidecar = match SidecarFacts::path_for(path) {
            Some(p) => Some(SidecarFacts::load(&p)?),
            None => None,
        };
        let bad = |e: kt_tuner::TunerError| PipelineError::BadFile {
            path: path.to_path_buf(),
            what: "kernel file",
            message: e.to_string(),
        };
        // The same reading as `kt tune` and `kt verify`: headers from the file's directory, then `--include`.
        let file = kt_tuner::KernelFile::load(path, include_dirs).map_err(bad)?;
        let mut source = KernelInput {
            path: path.to_path_buf(),
            text,
            kernel: kernel.map(str::to_string),
            sidecar,
            program: None,
            include_dirs: file.include_dirs.clone(),
        };
        // Several kernels and none chosen: kernel_name() says which there are.
        if let Ok(name) = source.kernel_name() {
            // Errors name the file: a user header in none of the directories, a unit that does not parse back.
            let unit = file.select(Some(&name)).map_err(bad)?.unit;
            if crate::kernel_unit::leaves_out_program(&unit) || !file.file.followed().is_empty() {
                tracing::info!(
                    file = %path.display(),
                    kernel = %name,
                    left_out = unit.dropped_host_items.len(),
                    "working on the kernel's own unit; the file is unchanged"
                );
                source.program = Some(std::mem::replace(&mut source.text, unit.text));
            }
        }
        Ok(source)
    }

    /// The chosen kernel's name: `--kernel`, else the sidecar's, else the file's only kernel (the error lists
    /// the kernels when the file holds several).
    pub fn kernel_name(&self) -> Result<String, PipelineError> {
        match (&self.kernel, &self.sidecar) {
            (Some(k), _) => Ok(k.clone()),
            (None, Some(s)) => Ok(s.kernel.clone()),
            (None, None) => Ok(kt_cuda::parse(&self.text)?
                .select_kernel(None)?
                .name
                .clone()),
        }
    }

    /// [`Self::include_dirs`] as run.json records them (absolute where they can be made so).
    pub fn include_dirs_for_record(&self) -> Vec<String> {
        self.include_dirs
            .iter()
            .map(|d| {
                std::path::absolute(d)
                    .unwrap_or_else(|_| d.clone())
                    .display()
                    .to_string()
            })
            .collect()
    }
}

/// Writes the run's `unit.cu` when the source is a whole program's kernel unit (what every stage and `kt
/// resume` work on; `input.cu` stays the exact copy of the user's file).
pub fn save_unit(run: &RunDir, source: &KernelInput) -> Result<(), PipelineError> {
    if source.program.is_some() {
        kt_record::layout::write_file(&run.unit_cu(), source.text.as_bytes())?;
    }
    Ok(())
}

/// How Stage 1 is answered.
// One value per run: the size difference between the variants costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub enum Stage1Source {
    /// Ask the LLM; `attempts` bounds each question.
    Llm {
        llm: LlmClient,
        prompts: Arc<PromptLibrary>,
        mode: StructuredMode,
        attempts: u32,
    },
    /// Take the facts from the kernel's sidecar (suite kernels; no LLM).
    Sidecar,
}

/// Stage 1's result with the sidecar comparison.
#[derive(Debug, Clone)]
pub struct Understood {
    pub stage1: Stage1Outcome,
    /// Empty when there is no sidecar, or when Stage 1 came from it.
    pub disagreements: Vec<SidecarDisagreement>,
}

/// Runs Stage 1 on `source` with checkpoints in `store` under run id `run`.
pub async fn understand(
    source: &KernelInput,
    how: Stage1Source,
    store: Arc<dyn CheckpointStore>,
    run: RunId,
) -> Result<Understood, PipelineError> {
    match how {
        Stage1Source::Sidecar => {
            let sidecar = source.sidecar.as_ref().ok_or_else(|| PipelineError::Sidecar {
                path: kt_cuda::Sidecar::path_for(&source.path),
                message: "--info-from-sidecar needs this file next to the kernel; without it, pass --llm".into(),
            })?;
            let stage1 = stage1::from_sidecar(&source.text, source.kernel.as_deref(), sidecar)?;
            Ok(Understood {
                stage1,
                disagreements: Vec::new(),
            })
        }
        Stage1Source::Llm {
            llm,
            prompts,
            mode,
            attempts,
        } => {
            let deps = Stage1Deps { llm, prompts, mode };
            let block = source.sidecar.as_ref().and_then(|s| s.default_block);
            let stage1 = stage1::analyze(
                deps,
                attempts,
                &source.text,
                source.kernel.as_deref(),
                block,
                store,
                run,
            )
            .await?;
            let disagreements = source
                .sidecar
                .as_ref()
                .map(|s| stage1::compare_with_sidecar(&stage1.info, s))
                .unwrap_or_default();
            Ok(Understood {
                stage1,
                disagreements,
            })
        }
    }
}

/// Stage 1 on its own, checkpointed in memory (`kt analyze`).
pub async fn analyze_file(
    source: &KernelInput,
    how: Stage1Source,
) -> Result<Understood, PipelineError> {
    understand(
        source,
        how,
        Arc::new(MemoryStore::new()),
        RunId::new("analyze"),
    )
    .await
}

/// What Stage 2 runs with, apart from the kernel.
#[derive(Clone)]
pub struct TestgenSettings {
    /// None: `script` must be set.
    pub llm: Option<LlmClient>,
    pub prompts: Arc<PromptLibrary>,
    /// A hand-written generator (`--script`), run through the same harness; no LLM is asked for one.
    pub script: Option<String>,
    pub options: Stage2Options,
    pub sandbox: Sandbox,
    pub python: PythonRuntime,
    pub reference: Arc<dyn ReferenceRunner>,
    /// Why this machine cannot run kernels, when the run would stop for it right after Stage 2 (`kt
    /// transform`): Stage 2 then makes no data. Tests are made where they are used: a run handed to a GPU
    /// machine keeps Stage 1 and makes its tests there (`kt resume`), instead of leaving full-size inputs
    /// behind here. `None`: make the tests (a GPU is here, or the tests are the product, as in `kt testgen`).
    pub gpu_missing: Option<String>,
}

/// Everything Stages 1 and 2 produced for a run.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub understood: Understood,
    pub tests: Stage2Outcome,
}

/// Runs Stages 1 and 2 into `run`: `kernel_info.json`, `tests/`, checkpoints in `run.sqlite` (run ids
/// `<run-id>/stage1` and `<run-id>/stage2`). The caller sets the run's final status.
pub async fn prepare(
    run: &RunDir,
    source: &KernelInput,
    stage1_from: Stage1Source,
    settings: TestgenSettings,
) -> Result<Prepared, PipelineError> {
    let store: Arc<dyn CheckpointStore> = Arc::new(SqliteStore::open(run.sqlite()).map_err(
        |e| PipelineError::Graph {
            stage: "stage 1",
            message: e.to_string(),
        },
    )?);
    let id = run.run_id();
    save_unit(run, source)?;
    run.record_sandbox(settings.sandbox.protections())?;
    // The sidecar's array sizes let the harness check a generator's arrays; they are ground truth, so they are
    // used (and shown in prompts) only when no LLM is being measured on them.
    let use_sidecar_sizes =
        matches!(stage1_from, Stage1Source::Sidecar) || settings.script.is_some();
    let understood = understand(
        source,
        stage1_from,
        store.clone(),
        RunId::new(format!("{id}/stage1")),
    )
    .await?;
    understood.stage1.info.save(run)?;
    // Without a GPU here, Stage 2 still gets its program from the LLM (which may be reachable only here, as on
    // an HPC login node) and checks it in the sandbox, then stops: the tests are made where they are used.
    // A hand-written program (`--script`) has nothing to ask.
    let reference = match settings.gpu_missing {
        Some(reason) if settings.script.is_some() => {
            return Err(PipelineError::TestsNeedGpu { reason });
        }
        Some(reason) => Arc::new(crate::stage2::OnGpuMachine { reason }),
        None => settings.reference,
    };
    let mut options = settings.options.clone();
    if options.array_sizes.is_empty()
        && use_sidecar_sizes
        && let Some(sidecar) = &source.sidecar
    {
        options.array_sizes = sidecar.sizes.clone();
    }
    let deps = Stage2Deps {
        llm: settings.llm,
        prompts: settings.prompts,
        sandbox: settings.sandbox,
        python: settings.python,
        reference,
        tests_dir: run.tests_dir(),
        options,
    };
    let info = &understood.stage1.info;
    let kernel = &understood.stage1.kernel;
    let tests = stage2::make_tests(
        deps,
        &source.text,
        kernel,
        info,
        settings.script,
        store,
        RunId::new(format!("{id}/stage2")),
    )
    .await?;
    for w in &tests.warnings {
        tracing::warn!("tests: {w}");
    }
    let warnings = serde_json::to_vec_pretty(&tests.warnings).unwrap_or_default();
    kt_record::layout::write_file(&run.test_warnings_json(), &warnings)?;
    Ok(Prepared { understood, tests })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn source(text: &str, kernel: Option<&str>) -> KernelInput {
        KernelInput {
            path: PathBuf::from("k.cu"),
            text: text.into(),
            kernel: kernel.map(str::to_string),
            sidecar: None,
            program: None,
            include_dirs: Vec::new(),
        }
    }

    #[test]
    fn kernel_name_is_the_requested_one_else_the_only_one_and_several_need_a_choice() {
        let two = "__global__ void a(float* x) {}\n__global__ void b(float* x) {}\n";
        assert_eq!(source(two, Some("b")).kernel_name().unwrap(), "b");
        let one = "__global__ void only(float* x) {}\n";
        assert_eq!(source(one, None).kernel_name().unwrap(), "only");
        let err = source(two, None).kernel_name().unwrap_err().to_string();
        assert!(err.contains('a') && err.contains('b'), "{err}");
    }

    #[test]
    fn a_whole_program_is_read_as_its_kernels_unit_and_the_file_kept_as_the_program() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/corpus/wild/vector_add_program.cu");
        let source = KernelInput::read(&path, None).unwrap();
        let program = source.program.as_deref().unwrap();
        assert!(program.contains("int main"));
        assert!(
            !source.text.contains("main(") && !source.text.contains("cudaMalloc"),
            "{}",
            source.text
        );
        assert!(source.text.contains("add_op") && source.text.contains("__global__"));
        assert_eq!(source.kernel_name().unwrap(), "vectorAdd");
        assert_eq!(source.include_dirs[0], path.parent().unwrap());
    }

    #[test]
    fn a_plain_kernel_file_is_kept_as_it_is_and_include_dirs_follow_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let cu = dir.path().join("k.cu");
        let text = "// doubles a\n__global__ void k(float* a) { a[0] *= 2.0f; }\n";
        std::fs::write(&cu, text).unwrap();
        let extra = dir.path().join("inc");
        let source =
            KernelInput::read_with_includes(&cu, None, std::slice::from_ref(&extra)).unwrap();
        assert_eq!(source.text, text, "comments and all");
        assert!(source.program.is_none());
        assert_eq!(source.include_dirs, vec![dir.path().to_path_buf(), extra]);
        let recorded = source.include_dirs_for_record();
        assert!(
            recorded.iter().all(|d| Path::new(d).is_absolute()),
            "{recorded:?}"
        );
    }

    #[test]
    fn a_user_header_is_found_through_an_include_dir_and_its_items_come_inline() {
        let dir = tempfile::tempdir().unwrap();
        let inc = dir.path().join("inc");
        std::fs::create_dir_all(&inc).unwrap();
        std::fs::write(
            inc.join("ops.h"),
            "__device__ float twice(float x) { return 2.0f * x; }\n",
        )
        .unwrap();
        let cu = dir.path().join("k.cu");
        std::fs::write(
            &cu,
            "#include \"ops.h\"\n__global__ void k(float* a) { a[0] = twice(a[0]); }\n",
        )
        .unwrap();
        let source = KernelInput::read_with_includes(&cu, None, &[inc]).unwrap();
        assert!(source.program.is_some());
        assert!(source.text.contains("return 2.0f * x"), "{}", source.text);
    }

    #[test]
    fn a_missing_user_header_names_the_file_the_header_and_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let cu = dir.path().join("k.cu");
        std::fs::write(
            &cu,
            "#include \"gone.h\"\n__global__ void k(float* a) { a[0] = 1.0f; }\n",
        )
        .unwrap();
        let err = KernelInput::read(&cu, None).unwrap_err().to_string();
        assert!(
            err.contains("gone.h") && err.contains("--include") && err.contains("k.cu"),
            "{err}"
        );
    }

    #[test]
    fn kernel_name_of_a_suite_kernel_comes_from_its_sidecar() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels/matmul.cu");
        let source = KernelInput::read(&path, None).unwrap();
        assert!(source.sidecar.is_some());
        assert_eq!(source.kernel_name().unwrap(), "matrixMultiply");
    }
}
