//! A run whose checkpoint store (`run.sqlite`) is gone or empty although the run got somewhere (Stage 1 wrote
//! the kernel's description, Stage 2 its tests, or the LLM was asked) cannot be continued: resuming would
//! silently start it over with a new store. `kt resume` says so instead.

use kt_pipeline::RunDir;

/// Why `run`'s store is lost, with what to do; `None` when it is there or the run never needed one yet.
pub(crate) fn store_lost(run: &RunDir) -> Option<String> {
    let progressed = run.kernel_info_json().is_file()
        || run.tests_dir().is_dir()
        || std::fs::metadata(run.llm_jsonl()).is_ok_and(|m| m.len() > 0);
    if !progressed {
        return None;
    }
    let state = match std::fs::metadata(run.sqlite()) {
        Err(_) => "is missing",
        Ok(m) if m.len() == 0 => "is empty",
        Ok(_) => return None,
    };
    Some(format!(
        "{} {state}, although the run got past its start: its checkpoints are lost, and resuming would start it \
         over silently. Start a new run (`kt transform {}`), or put back a copy of run.sqlite",
        run.sqlite().display(),
        run.read_meta()
            .map(|m| m.kernel_file)
            .unwrap_or_else(|_| "KERNEL.cu".into())
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_store_of_a_run_that_got_somewhere_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = tmp.path().join("k.cu");
        std::fs::write(&cu, "__global__ void k() {}").unwrap();
        let run = RunDir::create(
            tmp.path(),
            kt_pipeline::NewRun {
                kernel_file: &cu,
                kernel: "k",
                strategy: "autonomous",
                settings: Default::default(),
                llm: kt_pipeline::RunLlm::none(),
            },
        )
        .unwrap();
        assert_eq!(store_lost(&run), None, "a fresh run has no store yet");
        std::fs::write(run.kernel_info_json(), "{}").unwrap();
        let lost = store_lost(&run).unwrap();
        assert!(
            lost.contains("is missing") && lost.contains("kt transform"),
            "{lost}"
        );
        std::fs::write(run.sqlite(), "").unwrap();
        assert!(store_lost(&run).unwrap().contains("is empty"));
        std::fs::write(run.sqlite(), "SQLite format 3\0").unwrap();
        assert_eq!(store_lost(&run), None);
    }
}
