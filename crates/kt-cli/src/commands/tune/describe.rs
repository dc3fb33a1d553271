//! `kt tune --dry-run`: what would be tuned, on what, and how large the space is after its restrictions,
//! as lines or as JSON.

use kt_tuner::input::TuneSpace;
use kt_tuner::model::space::Restriction;

use super::report::time_label;
use super::{Prepared, TuneArgs};

/// `--dry-run`: what would be tuned, on what, and how large the space is after its restrictions.
pub(super) fn describe(args: &TuneArgs, p: &Prepared) -> anyhow::Result<Vec<String>> {
    let kernel = &p.loaded.kernel;
    let counted = TuneSpace::after_restrictions(&p.loaded, &p.tests)?;
    let params: Vec<String> = kernel
        .params
        .iter()
        .map(|t| {
            let values: Vec<String> = t.values.iter().map(|v| v.to_string()).collect();
            format!("{}={}", t.name, values.join(","))
        })
        .collect();
    let combinations: usize = kernel.params.iter().map(|t| t.values.len()).product();
    let mut lines = vec![
        format!(
            "kernel `{}` of {}{}",
            kernel.kernel_name,
            args.file.display(),
            p.loaded
                .sidecar
                .as_ref()
                .map(|s| format!(", described by {}", s.display()))
                .unwrap_or_default()
        ),
        format!("parameters: {}", params.join(" ")),
    ];
    for r in &kernel.restrictions {
        if let Restriction::Expr(e) = r {
            lines.push(format!("restriction: {e}"));
        }
    }
    lines.extend(p.launch_lines.iter().map(|l| format!("launch: {l}")));
    lines.push(format!(
        "space: {combinations} configurations, {} after restrictions (at most 1024 threads per block)",
        counted.len()
    ));
    lines.push(format!(
        "tests: {} ({})",
        p.tests.tests.len(),
        time_label(&p.tests)
    ));
    lines.push(format!(
        "strategy: {}{}",
        args.strategy,
        args.max_evals
            .map(|n| format!(", at most {n} configurations"))
            .unwrap_or_default()
    ));
    lines.push("dry run: nothing compiled or run; without --dry-run this tunes on the GPU".into());
    Ok(lines)
}

/// `--dry-run --json`: what [`describe`] says, as one JSON object.
pub(super) fn describe_json(args: &TuneArgs, p: &Prepared) -> anyhow::Result<serde_json::Value> {
    let kernel = &p.loaded.kernel;
    let counted = TuneSpace::after_restrictions(&p.loaded, &p.tests)?;
    let params: serde_json::Map<String, serde_json::Value> = kernel
        .params
        .iter()
        .map(|t| {
            let values: Vec<serde_json::Value> = t
                .values
                .iter()
                .map(|v| {
                    serde_json::from_str(&v.to_string()).unwrap_or_else(|_| v.to_string().into())
                })
                .collect();
            (t.name.clone(), values.into())
        })
        .collect();
    let restrictions: Vec<String> = kernel
        .restrictions
        .iter()
        .filter_map(|r| match r {
            Restriction::Expr(e) => Some(e.to_string()),
            _ => None,
        })
        .collect();
    Ok(serde_json::json!({
        "dry_run": true,
        "file": args.file,
        "kernel": kernel.kernel_name,
        "sidecar": p.loaded.sidecar,
        "parameters": params,
        "restrictions": restrictions,
        "launch": p.launch_lines,
        "configurations": kernel.params.iter().map(|t| t.values.len()).product::<usize>(),
        "after_restrictions": counted.len(),
        "tests": p.tests.tests.len(),
        "time_basis": time_label(&p.tests),
        "strategy": args.strategy,
        "max_evals": args.max_evals,
    }))
}
