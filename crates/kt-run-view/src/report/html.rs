//! The page itself. Plain HTML with inline CSS and SVG; collapsible parts are `<details>`, so it needs no
//! script and works from a file:// URL or an email attachment.

use std::fmt::Write as _;

use super::chart::speedup_svg;
use super::collect::ReportInputs;
use super::graph_svg::esc;
use super::notice::{nothing, run_state};
use crate::catalog::format_duration;

const CSS: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1200px; padding: 16px 12px; color: #222; }
h1 { font-size: 22px; margin: 8px 0 4px; overflow-wrap: anywhere; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
table { border-collapse: collapse; font-size: 13px; display: block; max-width: 100%; overflow-x: auto; } td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f6f6f6; } .num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f8f8f8; border: 1px solid #e4e4e4; padding: 8px; overflow: auto; font-size: 12px; max-height: 480px; max-width: 100%; box-sizing: border-box; }
svg { max-width: 100%; height: auto; }
details { margin: 4px 0; max-width: 100%; } summary { cursor: pointer; font-size: 13px; overflow-wrap: anywhere; }
.accepted { color: #1e7b2c; font-weight: 600; } .rejected, .dropped, .invalid { color: #b03a2e; }
.diff .add { color: #1e7b2c; } .diff .del { color: #b03a2e; } .diff .hunk { color: #6a4fb3; }
.muted { color: #777; } .flex { display: flex; gap: 24px; align-items: flex-start; flex-wrap: wrap; } .flex > * { min-width: 0; max-width: 100%; }
.state { border-left: 4px solid #e08a00; background: #fff8e6; padding: 8px 12px; margin: 12px 0; overflow-wrap: anywhere; }
"#;

/// The HTML page of one run.
pub fn render_html(r: &ReportInputs) -> String {
    let mut h = String::new();
    let title = format!("kt run {}", r.summary.id);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body>",
        esc(&title)
    );
    let _ = write!(h, "<h1 id=\"title\">{}</h1>", esc(&title));
    if let Some(state) = run_state(r) {
        h.push_str(&state);
    }
    summary(&mut h, r);
    let _ = write!(
        h,
        "<h2>Graph and path taken</h2><div id=\"graph\" class=\"flex\">{}<div>{}<p class=\"muted\">Highlighted: the nodes the run visited and the edges it took ({}). Solid edges always follow; dashed ones (“route”) are taken when the node chooses them; dotted ones (“on error”) when its retries run out.</p>{}</div></div>",
        r.graph.to_svg(),
        r.graph
            .note
            .as_deref()
            .map(|n| format!("<p id=\"graph-note\" class=\"muted\">{}</p>", esc(n)))
            .unwrap_or_default(),
        esc(&r.graph_run),
        verdict_table(r)
    );
    timeline(&mut h, r);
    steps(&mut h, r);
    llm(&mut h, r);
    kernels(&mut h, r);
    tuning(&mut h, r);
    super::roofline::section(
        &mut h,
        &r.summary.kernel,
        r.roofline.as_ref(),
        &r.profiles,
        r.summary.duration_s,
    );
    let _ = write!(h, "<h2>Speedup per step</h2><div id=\"speedup\">");
    if r.points.is_empty() {
        h.push_str(&nothing("speedup-empty", "No measured steps", r));
    } else {
        let _ = write!(
            h,
            "{}<p class=\"muted\">Dots: each step's best verified candidate (green accepted, red not); line: best so far; dashed: the original kernel (1×).</p>",
            speedup_svg(&r.points)
        );
    }
    h.push_str("</div></body></html>\n");
    h
}

fn summary(h: &mut String, r: &ReportInputs) {
    let s = &r.summary;
    let res = r.result.as_ref();
    let rows: Vec<(&str, String)> = vec![
        ("kernel", s.kernel.clone()),
        ("strategy", s.strategy.clone()),
        ("model", s.model.clone()),
        ("status", s.status_text().to_string()),
        ("started", s.started.clone()),
        (
            "duration",
            s.duration_s.map(format_duration).unwrap_or_default(),
        ),
        (
            "original",
            r.naive_time_ms
                .or(res.and_then(|v| v.naive_time_ms))
                .map(|t| format!("{t:.4} ms"))
                .unwrap_or_default(),
        ),
        (
            "best",
            res.and_then(|v| v.best_time_ms)
                .map(|t| format!("{t:.4} ms"))
                .unwrap_or_default(),
        ),
        (
            "speedup",
            s.speedup.map(|v| format!("{v:.2}×")).unwrap_or_default(),
        ),
        (
            "tokens",
            res.map(|v| format!("{} in / {} out", v.tokens_in, v.tokens_out))
                .unwrap_or_default(),
        ),
    ];
    let mut rows = rows;
    if let Some(e) = res.and_then(|v| v.error.as_deref()) {
        rows.push(("error", e.to_string()));
    }
    h.push_str("<table id=\"summary\">");
    for (k, v) in rows {
        let _ = write!(h, "<tr><th>{k}</th><td>{}</td></tr>", esc(&or_dash(v)));
    }
    h.push_str("</table>");
}

/// A value not known (yet) is a dash, not a blank cell.
fn or_dash(v: String) -> String {
    if v.is_empty() { "—".to_string() } else { v }
}

fn verdict_table(r: &ReportInputs) -> String {
    if r.verdicts.is_empty() {
        return nothing("verdicts", "No kernel judged", r);
    }
    let mut h = String::from(
        "<table id=\"verdicts\"><tr><th>step</th><th>verdict</th><th class=\"num\">time (ms)</th><th>why</th></tr>",
    );
    for v in &r.verdicts {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"{}\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&v.step),
            esc(&v.status.replace(' ', "-")),
            esc(&v.status),
            v.time_ms.map(|t| format!("{t:.4}")).unwrap_or_default(),
            esc(&v.reason)
        );
    }
    h.push_str("</table>");
    h
}

fn timeline(h: &mut String, r: &ReportInputs) {
    h.push_str("<h2>Timeline</h2><div id=\"timeline\">");
    if r.path.iter().all(|s| s.nodes.is_empty()) {
        h.push_str(&nothing("timeline-empty", "No step of the strategy ran", r));
        h.push_str("</div>");
        return;
    }
    let rows: Vec<(String, f64, f64)> = {
        let mut t = 0.0;
        let mut out = Vec::new();
        for step in &r.path {
            let secs = step.seconds();
            if step.nodes.is_empty() {
                continue;
            }
            let names: Vec<String> = step.nodes.iter().map(|n| n.node.clone()).collect();
            out.push((
                format!("#{} {}", step.checkpoint, names.join(", ")),
                t,
                secs,
            ));
            t += secs;
        }
        out
    };
    let total: f64 = rows.iter().map(|r| r.2).sum::<f64>().max(1e-9);
    let (w, label_w, row_h) = (900.0, 260.0, 18.0);
    let height = rows.len() as f64 * row_h + 24.0;
    let _ = write!(
        h,
        r#"<svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}">"#
    );
    for (i, (label, start, secs)) in rows.iter().enumerate() {
        let y = i as f64 * row_h + 4.0;
        let x = label_w + start / total * (w - label_w - 60.0);
        let bw = (secs / total * (w - label_w - 60.0)).max(1.5);
        let _ = write!(
            h,
            r##"<text x="0" y="{:.1}" font-size="11" font-family="monospace">{}</text><rect x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{:.1}" fill="#4a7bd0"><title>{} — {secs:.3}s</title></rect><text x="{:.1}" y="{:.1}" font-size="10" font-family="sans-serif" fill="#555">{}</text>"##,
            y + 12.0,
            esc(&label.chars().take(38).collect::<String>()),
            row_h - 4.0,
            esc(label),
            x + bw + 4.0,
            y + 11.0,
            human_secs(*secs)
        );
    }
    h.push_str("</svg></div>");
}

/// `12.3 ms` below a second, `4.56 s` above.
fn human_secs(secs: f64) -> String {
    if secs < 1.0 {
        format!("{:.1} ms", secs * 1e3)
    } else {
        format!("{secs:.2} s")
    }
}

fn steps(h: &mut String, r: &ReportInputs) {
    if r.path.is_empty() {
        h.push_str("<h2>Steps</h2>");
        h.push_str(&nothing("steps", "No steps", r));
        return;
    }
    h.push_str("<h2>Steps</h2><table id=\"steps\"><tr><th>checkpoint</th><th>step</th><th>node(s)</th><th class=\"num\">time (s)</th><th class=\"num\">tokens in/out</th><th>outcome</th><th>next</th></tr>");
    for s in &r.path {
        let nodes = s.node_labels();
        let secs = s.seconds();
        let _ = write!(
            h,
            "<tr><td>#{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{secs:.3}</td><td class=\"num\">{}/{}</td><td>{}</td><td>{}</td></tr>",
            s.checkpoint,
            s.step,
            esc(&or_dash(nodes.join(", "))),
            s.tokens_in,
            s.tokens_out,
            esc(&s.outcome),
            esc(&or_dash(s.next.join(", ")))
        );
    }
    h.push_str("</table>");
}

fn llm(h: &mut String, r: &ReportInputs) {
    let _ = write!(
        h,
        "<h2>Prompts and answers ({})</h2><div id=\"llm-calls\">",
        r.llm.len()
    );
    if r.llm.is_empty() {
        h.push_str("<p class=\"muted\">No LLM record (llm.jsonl) in this run.</p>");
    }
    for (i, c) in r.llm.iter().enumerate() {
        let _ = write!(
            h,
            "<details class=\"llm-call\" id=\"llm-{i}\"><summary>{} — {} — {} in / {} out{}</summary><h4>Prompt</h4><pre>{}</pre><h4>Answer</h4><pre>{}</pre></details>",
            esc(&c.node),
            esc(&c.time),
            c.tokens_in,
            c.tokens_out,
            c.error
                .as_ref()
                .map(|e| format!(" — failed: {}", esc(e)))
                .unwrap_or_default(),
            esc(&c.prompt),
            esc(&c.answer)
        );
    }
    h.push_str("</div>");
}

fn diff_html(diff: &str) -> String {
    diff.lines()
        .map(|l| {
            let class = if l.starts_with("+++") || l.starts_with("---") {
                ""
            } else if l.starts_with('+') {
                "add"
            } else if l.starts_with('-') {
                "del"
            } else if l.starts_with("@@") {
                "hunk"
            } else {
                ""
            };
            if class.is_empty() {
                esc(l)
            } else {
                format!("<span class=\"{class}\">{}</span>", esc(l))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn kernels(h: &mut String, r: &ReportInputs) {
    let _ = write!(
        h,
        "<h2>Kernel versions ({})</h2><div id=\"kernels\">",
        r.kernels.len()
    );
    if r.kernels.is_empty() {
        h.push_str(&nothing("kernels-empty", "No kernel versions", r));
    }
    for (i, k) in r.kernels.iter().enumerate() {
        let verdict = k
            .meta
            .as_ref()
            .and_then(|m| m.verdict.as_deref())
            .map(|v| format!("— {v}"))
            // The original kernel is measured, not judged.
            .unwrap_or_else(|| {
                if i == 0 {
                    "— the original".into()
                } else {
                    String::new()
                }
            });
        let _ = write!(
            h,
            "<details class=\"kernel\" id=\"kernel-{i}\"><summary>{} {}</summary>",
            esc(&k.name),
            esc(&verdict)
        );
        if let Some(d) = &k.diff {
            let _ = write!(
                h,
                "<h4>Diff against the previous version</h4><pre class=\"diff\">{}</pre>",
                diff_html(d)
            );
        }
        let _ = write!(
            h,
            "<details><summary>full source</summary><pre>{}</pre></details>",
            esc(&k.code)
        );
        if let Some(m) = &k.meta {
            let _ = write!(
                h,
                "<details><summary>record</summary><pre>{}</pre></details>",
                esc(&serde_json::to_string_pretty(m).unwrap_or_default())
            );
        }
        h.push_str("</details>");
    }
    h.push_str("</div>");
}

fn tuning(h: &mut String, r: &ReportInputs) {
    if r.tuning.is_empty() {
        h.push_str("<h2>Tuning</h2>");
        h.push_str(&nothing("tuning", "Nothing tuned", r));
        return;
    }
    h.push_str("<h2>Tuning</h2><table id=\"tuning\"><tr><th>round</th><th>candidate</th><th>verdict</th><th class=\"num\">time (ms)</th><th class=\"num\">noise (ms)</th><th class=\"num\">speedup</th><th>best parameters</th><th class=\"num\">configs tried/failed</th><th>detail</th></tr>");
    for t in &r.tuning {
        let speedup = match (r.naive_time_ms, t.time_ms) {
            (Some(n), Some(x)) if x > 0.0 => format!("{:.2}×", n / x),
            _ => String::new(),
        };
        let _ = write!(
            h,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{speedup}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            t.round,
            t.index,
            esc(&t.verdict),
            t.time_ms.map(|v| format!("{v:.4}")).unwrap_or_default(),
            t.noise_ms.map(|v| format!("{v:.4}")).unwrap_or_default(),
            esc(&t.best_params),
            match (t.configs_tried, t.configs_failed) {
                (Some(a), Some(b)) => format!("{a}/{b}"),
                _ => String::new(),
            },
            esc(&t.detail.chars().take(300).collect::<String>())
        );
    }
    h.push_str("</table>");
}
