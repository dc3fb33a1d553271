//! The kernels a run writes as it goes: `kernels/NNN-<slug>.cu` with a `.json` beside it (verdict and tuning
//! summary), one per candidate and one for the original.

use std::collections::BTreeMap;

use kt_record::{KernelRecord, ParameterRecord};

use crate::error::PipelineError;
use crate::stage3::backend::tuning_backend::Outcome;
use crate::stage3::context::Stage3Context;
use crate::stage3::tunable_code::TunableCode;

/// A file-name slug: the first words of a step, lower case, joined by dashes.
pub(crate) fn slug(text: &str) -> String {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    if words.is_empty() {
        "step".into()
    } else {
        words.join("-")
    }
}

/// Writes `kernels/NNN-<slug>.cu` and its `.json` (verdict and tuning summary) when the run has a directory.
/// Returns the `.cu` path relative to the run directory.
pub(crate) fn write_kernel_file(
    cx: &Stage3Context,
    number: u32,
    name: &str,
    kernel: &TunableCode,
    outcome: Option<&Outcome>,
    best_params: &BTreeMap<String, i64>,
) -> Result<Option<String>, PipelineError> {
    let Some(dir) = &cx.run_dir else {
        return Ok(None);
    };
    let kernels = dir.join("kernels");
    std::fs::create_dir_all(&kernels).map_err(|e| PipelineError::io("creating", &kernels, e))?;
    let stem = format!("{number:03}-{}", slug(name));
    let cu = kernels.join(format!("{stem}.cu"));
    std::fs::write(&cu, &kernel.code).map_err(|e| PipelineError::io("writing", &cu, e))?;
    let record = KernelRecord {
        step: name.to_string(),
        parameters: kernel
            .parameters
            .iter()
            .map(|p| ParameterRecord {
                name: p.name.clone(),
                values: p.values.clone(),
            })
            .collect(),
        restrictions: kernel.restrictions.clone(),
        grid_divisors: kernel.grid_divisors.clone(),
        dynamic_shared_memory: kernel.dynamic_shared_memory.clone(),
        verdict: outcome.map(|o| o.verdict().to_string()),
        outcome: outcome.and_then(|o| serde_json::to_value(o).ok()),
        best_params: best_params.clone(),
    };
    record.write(&kernels.join(format!("{stem}.json")))?;
    Ok(Some(format!("kernels/{stem}.cu")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_short_and_file_safe() {
        assert_eq!(
            slug("Tile A and B in shared memory (tunable tile_k)!"),
            "tile-a-and-b-in-shared"
        );
        assert_eq!(slug("***"), "step");
    }
}
