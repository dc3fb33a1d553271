//! `best_program.cu`: for a run whose input was a whole program (host code, other kernels or user headers
//! around the kernel, so the run worked on the kernel's unit in `unit.cu`), a copy of the user's file with the
//! best kernel put back in (kt-cuda's `splice_kernel_into_file`); the host code is as the user wrote it. The
//! user's file itself is never changed.

use crate::error::PipelineError;
use crate::stage3::KernelVersion;
use kt_record::RunDir;

/// The program with `best` in place of kernel `kernel`, its tuned values defined at the top; None when the run's
/// input was the kernel's unit already (no `unit.cu`).
pub(crate) fn best_program_text(
    dir: &RunDir,
    best: &KernelVersion,
    kernel: &str,
) -> Result<Option<String>, PipelineError> {
    if !dir.unit_cu().is_file() {
        return Ok(None);
    }
    let meta = dir.read_meta()?;
    let program = std::fs::read_to_string(dir.input_cu())
        .map_err(|e| PipelineError::io("reading", dir.input_cu(), e))?;
    let file =
        kt_cuda::SourceFile::from_text(&meta.kernel_file, &program, &meta.settings.include_paths());
    let spliced = kt_cuda::splice_kernel_into_file(&file, kernel, &best.kernel.code)?;
    Ok(Some(header(best, kernel, &meta.kernel_file) + &spliced))
}

/// What the file is, the tuned values as overridable `#define`s, and the one thing the user must change.
fn header(best: &KernelVersion, kernel: &str, file: &str) -> String {
    let mut head = format!(
        "// kt: {file} with kernel `{kernel}` replaced by the best verified kernel (from step: {}); the rest of the \
         program is as you wrote it.\n",
        best.step
    );
    if !best.best_params.is_empty() {
        let block: Vec<String> = crate::stage3::BLOCK_SIZE_NAMES
            .iter()
            .map(|n| {
                best.best_params
                    .get(*n)
                    .map_or_else(|| "1".to_string(), i64::to_string)
            })
            .collect();
        head.push_str(&format!(
            "// The tuned values are defined below (override with -Dname=value). The host code still launches \
             `{kernel}` as before: launch it with block ({}) and the grid best.cu's header gives, or it computes \
             wrong results.\n",
            block.join(", ")
        ));
        for (name, value) in &best.best_params {
            head.push_str(&format!("#ifndef {name}\n#define {name} {value}\n#endif\n"));
        }
    }
    head.push('\n');
    head
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stage3::{TunableParameter, default_grid_divisors};
    use kt_record::{NewRun, RunLlm, RunSettings};

    const PROGRAM: &str = "#include <stdio.h>\n__device__ float twice(float x) { return 2.0f * x; }\n\
        __global__ void scale(float* a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    \
        if (i < n) a[i] = twice(a[i]);\n}\nint main() {\n    scale<<<4, 256>>>(0, 1024);\n    printf(\"done\\n\");\n    \
        return 0;\n}\n";

    fn run(tmp: &std::path::Path, unit: bool) -> RunDir {
        let cu = tmp.join("prog.cu");
        std::fs::write(&cu, PROGRAM).unwrap();
        let run = RunDir::create(
            &tmp.join("runs"),
            NewRun {
                kernel_file: &cu,
                kernel: "scale",
                strategy: "autonomous",
                settings: RunSettings::default(),
                llm: RunLlm::default(),
            },
        )
        .unwrap();
        if unit {
            std::fs::write(run.unit_cu(), "unit").unwrap();
        }
        run
    }

    fn best() -> KernelVersion {
        KernelVersion {
            kernel: crate::stage3::TunableCode {
                code: "__device__ float twice(float x) { return x + x; }\n\
                       __global__ void scale(float* a, int n) {\n    int i = blockIdx.x * block_size_x + threadIdx.x;\n    \
                       if (i < n) a[i] = twice(a[i]);\n}\n"
                    .into(),
                parameters: vec![TunableParameter {
                    name: "block_size_x".into(),
                    values: vec![128, 256],
                }],
                restrictions: vec![],
                grid_divisors: default_grid_divisors(),
                dynamic_shared_memory: None,
                seeds: Vec::new(),
            },
            time_ms: 1.0,
            noise_ms: 0.0,
            best_params: [("block_size_x".to_string(), 128)].into(),
            step: "block size".into(),
            file: None,
            percent_of_peak: None,
            gflops: None,
        }
    }

    #[test]
    fn the_best_kernel_goes_back_into_a_copy_of_the_program_with_its_host_code() {
        let tmp = tempfile::tempdir().unwrap();
        let run = run(tmp.path(), true);
        let text = best_program_text(&run, &best(), "scale").unwrap().unwrap();
        assert!(text.contains("blockIdx.x * block_size_x"), "{text}");
        assert!(
            text.contains("return x + x;") && !text.contains("2.0f * x"),
            "{text}"
        );
        assert!(
            text.contains("int main()") && text.contains("scale<<<4, 256>>>"),
            "{text}"
        );
        assert!(text.contains("#define block_size_x 128") && text.contains("block (128, 1, 1)"));
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("prog.cu")).unwrap(),
            PROGRAM,
            "the user's file is unchanged"
        );
    }

    #[test]
    fn a_run_on_a_plain_kernel_file_has_no_program_to_splice_into() {
        let tmp = tempfile::tempdir().unwrap();
        let run = run(tmp.path(), false);
        assert!(best_program_text(&run, &best(), "scale").unwrap().is_none());
    }
}
