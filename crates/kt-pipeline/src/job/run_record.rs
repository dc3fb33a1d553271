//! Parts of a run's record that come from outside Stage 3's graph: the GPU and the sandbox the run ran with
//! (report lines) and the program the best kernel is put back into (`best_program.cu`).

use super::best_program::best_program_text;
use crate::error::PipelineError;
use crate::stage3::Stage3State;
use kt_record::{ResultFiles, RunDir};

/// The report's lines on the delivered program, the GPU and the generator sandbox (nothing for what is not
/// recorded).
pub fn environment_markdown(
    best_program: Option<&str>,
    gpu: Option<&kt_record::GpuRecord>,
    sandbox: Option<&kt_sandbox::Protections>,
) -> String {
    let mut md = String::new();
    if let Some(program) = best_program {
        md.push_str(&format!(
            "- the input was a whole program: kt worked on the kernel's own unit (`unit.cu`); `best.cu` is that unit \
             transformed, `{program}` your program with it put back (your file is unchanged)\n"
        ));
    }
    if let Some(gpu) = gpu {
        md.push_str(&format!("- GPU: {}\n", gpu.summary()));
    }
    if let Some(p) = sandbox {
        let lines: Vec<String> = p
            .lines()
            .iter()
            .map(|l| format!("{}: {}", l.name, l.state()))
            .collect();
        md.push_str(&format!(
            "- sandbox of the generated test programs: {}\n",
            lines.join("; ")
        ));
    }
    md
}

/// Writes `best_program.cu` next to `best.cu` when the run's input was a whole program; its file name, or None.
/// A program the best kernel cannot be put back into is logged and left out: best.cu is the result either way.
pub(crate) fn write_best_program(
    dir: &RunDir,
    out: &ResultFiles,
    state: &Stage3State,
) -> Result<Option<String>, PipelineError> {
    let Some(best) = &state.best else {
        return Ok(None);
    };
    let kernel = dir.read_meta()?.kernel;
    match best_program_text(dir, best, &kernel) {
        Ok(Some(text)) => {
            let path = out.best_program_cu();
            std::fs::write(&path, text).map_err(|e| PipelineError::io("writing", &path, e))?;
            Ok(Some("best_program.cu".into()))
        }
        Ok(None) => Ok(None),
        Err(e) => {
            tracing::warn!(
                "best_program.cu not written: the best kernel could not be put back into the program: {e}"
            );
            Ok(None)
        }
    }
}
