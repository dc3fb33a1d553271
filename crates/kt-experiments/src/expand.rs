//! Expansion of a design into its cells. Deterministic: studies in file order, then kernels (globs sorted by
//! path), strategies, grid points (keys in alphabetical order, values in file order, the last key varying
//! fastest), models and repeats. A cell listed by several studies appears once, at its first position.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;

use crate::cell::{Cell, CellId};
use crate::design::{Design, KernelSpec};
use crate::error::ExperimentError;
use crate::settings::SettingValue;

/// A kernel file found on disk: the path relative to the root (as it enters the cell id) and its name.
#[derive(Debug, Clone, PartialEq)]
struct KernelFile {
    relative: String,
    name: String,
    choice: Option<String>,
}

/// Every cell of the design, in a stable order.
pub fn expand(design: &Design) -> Result<Vec<Cell>, ExperimentError> {
    let mut cells: Vec<Cell> = Vec::new();
    let mut index: HashMap<CellId, usize> = HashMap::new();
    for study in &design.studies {
        let mut kernels = Vec::new();
        for spec in &study.kernels {
            kernels.extend(resolve_kernels(design, spec)?);
        }
        for kernel in &kernels {
            for strategy in &study.strategies {
                for point in grid_points(&strategy.grid) {
                    let mut settings = study.settings.clone();
                    settings.extend(strategy.settings.clone());
                    settings.extend(point.clone());
                    for model in &study.models {
                        for repeat in 0..study.repeats {
                            let seed = study
                                .seeds
                                .as_ref()
                                .map_or(u64::from(repeat), |s| s[repeat as usize]);
                            let mut cell = Cell {
                                id: CellId(String::new()),
                                studies: vec![study.name.clone()],
                                kernel: kernel.name.clone(),
                                kernel_file: kernel.relative.clone(),
                                kernel_choice: kernel.choice.clone(),
                                strategy: strategy.name.clone(),
                                grid: point.clone(),
                                settings: settings.clone(),
                                model: model.clone(),
                                repeat,
                                seed,
                                budget: study.budget,
                            };
                            cell.id = cell.compute_id();
                            match index.get(&cell.id) {
                                Some(&i) => {
                                    if !cells[i].studies.contains(&study.name) {
                                        cells[i].studies.push(study.name.clone());
                                    }
                                }
                                None => {
                                    index.insert(cell.id.clone(), cells.len());
                                    cells.push(cell);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(cells)
}

/// The cartesian product of a grid, as maps from key to value. An empty grid has one (empty) point.
fn grid_points(grid: &BTreeMap<String, Vec<SettingValue>>) -> Vec<BTreeMap<String, SettingValue>> {
    let mut points = vec![BTreeMap::new()];
    for (key, values) in grid {
        let mut next = Vec::with_capacity(points.len() * values.len());
        for point in &points {
            for value in values {
                let mut p = point.clone();
                p.insert(key.clone(), value.clone());
                next.push(p);
            }
        }
        points = next;
    }
    points
}

fn resolve_kernels(design: &Design, spec: &KernelSpec) -> Result<Vec<KernelFile>, ExperimentError> {
    let pattern = spec.pattern();
    let is_glob = pattern.contains(['*', '?', '[']);
    let relatives: Vec<String> = if is_glob {
        let full = design.root.join(pattern);
        let full = full.to_string_lossy();
        let paths = glob::glob(&full).map_err(|e| {
            ExperimentError::design(
                &design.file,
                format!("kernel pattern `{pattern}` is not a valid glob: {e}"),
            )
        })?;
        let mut found: Vec<String> = paths
            .filter_map(Result::ok)
            .filter(|p| p.is_file())
            .filter_map(|p| relative_to(&p, &design.root))
            .collect();
        found.sort();
        found
    } else if design.root.join(pattern).is_file() {
        vec![pattern.trim_start_matches("./").to_string()]
    } else {
        Vec::new()
    };
    if relatives.is_empty() {
        return Err(ExperimentError::NoKernel {
            path: design.file.clone(),
            pattern: pattern.to_string(),
            root: design.root.clone(),
        });
    }
    Ok(relatives
        .into_iter()
        .map(|relative| {
            let stem = Path::new(&relative)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(&relative)
                .to_string();
            KernelFile {
                name: spec.kernel().map_or(stem, str::to_string),
                choice: spec.kernel().map(str::to_string),
                relative,
            }
        })
        .collect())
}

fn relative_to(path: &Path, root: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design_in(dir: &Path, text: &str) -> Design {
        std::fs::create_dir_all(dir.join("k")).unwrap();
        for k in ["a", "b", "c"] {
            std::fs::write(dir.join(format!("k/{k}.cu")), "__global__ void k() {}").unwrap();
        }
        Design::parse(text, &dir.join("exp.toml")).unwrap()
    }

    const TEXT: &str = r#"
        name = "t"
        kernels = ["k/[ab].cu"]
        models = ["scripted:s.toml", "openai:gpt-4.1"]
        repeats = 2
        strategies = ["one-prompt", { name = "autonomous", grid = { breakdown = [0, 3], replan = [0, 3] } }]
    "#;

    #[test]
    fn expansion_is_the_full_product_in_a_stable_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = design_in(dir.path(), TEXT);
        let cells = expand(&d).unwrap();
        // 2 kernels × (1 + 4 grid points) × 2 models × 2 repeats
        assert_eq!(cells.len(), 2 * 5 * 2 * 2);
        assert_eq!(cells[0].kernel, "a");
        assert_eq!(cells[0].kernel_file, "k/a.cu");
        assert_eq!(cells[0].strategy, "one-prompt");
        assert_eq!(cells[4].variant(), "autonomous[breakdown=0,replan=0]");
        assert_eq!(cells[8].variant(), "autonomous[breakdown=0,replan=3]");
        let again = expand(&d).unwrap();
        assert_eq!(cells, again);
        let mut ids: Vec<_> = cells.iter().map(|c| c.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), cells.len(), "ids are unique");
    }

    #[test]
    fn adding_a_kernel_keeps_the_existing_ids() {
        let dir = tempfile::tempdir().unwrap();
        let before = expand(&design_in(dir.path(), TEXT)).unwrap();
        let after = expand(&design_in(dir.path(), &TEXT.replace("[ab]", "*"))).unwrap();
        assert_eq!(after.len(), before.len() / 2 * 3);
        for cell in &before {
            assert!(after.iter().any(|c| c.id == cell.id), "{} kept", cell.id);
        }
    }

    #[test]
    fn a_cell_in_two_studies_is_shared() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "{TEXT}\n[[study]]\nname = \"main\"\n[[study]]\nname = \"focus\"\nkernels = [\"k/a.cu\"]\nstrategies = [\"one-prompt\"]\n"
        );
        let cells = expand(&design_in(dir.path(), &text)).unwrap();
        assert_eq!(cells.len(), 40, "the focus study adds no new cells");
        let shared = cells.iter().filter(|c| c.studies.len() == 2).count();
        assert_eq!(shared, 4, "a × one-prompt × 2 models × 2 repeats");
    }

    #[test]
    fn a_pattern_matching_nothing_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = design_in(dir.path(), &TEXT.replace("k/[ab].cu", "k/zz*.cu"));
        let e = expand(&d).unwrap_err().to_string();
        assert!(e.contains("k/zz*.cu"), "{e}");
    }
}
