//! The run directory as kt-pipeline writes it: kt-record's layout and records, with their errors in
//! [`PipelineError`], and `kernel_info.json` (Stage 1's answer, a pipeline type).

use std::path::Path;

use serde::Serialize;

pub use kt_record::{
    GpuRecord, NewRun, RUNS_DIR_ENV, ResultFiles, RunDir, RunLlm, RunMeta, RunSettings, RunStatus,
    WaitingAnswer,
};

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), PipelineError> {
    Ok(kt_record::layout::write_file(path, bytes)?)
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), PipelineError> {
    Ok(kt_record::layout::write_json(path, value)?)
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &'static str,
) -> Result<T, PipelineError> {
    Ok(kt_record::layout::read_json(path, what)?)
}

impl KernelInfo {
    /// Writes `kernel_info.json` in `dir`.
    pub fn save(&self, dir: &RunDir) -> Result<(), PipelineError> {
        write_json(&dir.kernel_info_json(), self)
    }

    /// Reads `kernel_info.json` of `dir`.
    pub fn load(dir: &RunDir) -> Result<KernelInfo, PipelineError> {
        read_json(&dir.kernel_info_json(), "kernel_info.json")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::kernel_info::ProblemDimension;

    fn new_run(file: &Path) -> NewRun<'_> {
        NewRun {
            kernel_file: file,
            kernel: "vectorAdd",
            strategy: "testgen",
            settings: RunSettings {
                tests: Some(3),
                ..RunSettings::default()
            },
            llm: RunLlm {
                provider: "scripted".into(),
                model: "scripted".into(),
                ..RunLlm::default()
            },
        }
    }

    #[test]
    fn kernel_info_round_trips_and_open_refuses_a_non_run() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = tmp.path().join("k.cu");
        std::fs::write(&cu, "x").unwrap();
        let run = RunDir::create(tmp.path(), new_run(&cu)).unwrap();
        let info = KernelInfo {
            name: "vectorAdd".into(),
            parameters: vec!["a".into(), "n".into()],
            description: "adds".into(),
            problem_size: vec![ProblemDimension {
                expression: "n".into(),
            }],
            outputs: vec!["a".into()],
            inputs_and_outputs: vec!["a".into()],
            default_block: [256, 1, 1],
        };
        info.save(&run).unwrap();
        assert_eq!(KernelInfo::load(&run).unwrap(), info);
        let err = RunDir::open(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("run.json"), "{err}");
    }
}
