//! `kt debug`: look inside a recorded run — its history, the state at a checkpoint, the diff of two
//! checkpoints — run one node again against a saved state, and set breakpoints. Logic lives in kt-runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use kt_runs::{
    Breakpoints, CheckpointId, NodeDebug, NodeReport, RunRecord, Setup, Stage3Binding,
    breakpoint_nodes, debug_node, diff, history, render_text, resolve_run, runs_base, session_dir,
    set_breakpoints, state_at,
};

#[derive(Debug, Args)]
pub struct DebugArgs {
    #[command(subcommand)]
    pub command: DebugCommand,
}

#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Every checkpoint of every branch: step, node(s) run, fields changed, what runs next.
    History(RunArg),
    /// The state at a checkpoint (default: the newest), or one field of it (`--field best.kernel.code`).
    State(StateArgs),
    /// Per-field differences between two checkpoints; code and other multi-line text as unified diffs.
    Diff(DiffArgs),
    /// Run one node against a saved state and show its prompt, raw answer, update, route and tuning results.
    /// Nothing of the run changes unless --commit (which stores the result as a new branch).
    Node(NodeArgs),
    /// Store breakpoints with the run: `kt resume` and `kt replay` stop before/after these nodes.
    Break(BreakArgs),
}

#[derive(Debug, Args)]
pub struct RunArg {
    /// A run id (or a unique prefix of one) under the runs directory, or a run directory.
    pub run: String,
    /// Where runs live (default: $KT_RUNS_DIR, else ./kt-runs).
    #[arg(long)]
    pub runs_dir: Option<PathBuf>,
    /// Which graph of the run: stage1, stage2 or stage3 (default: stage3, or the newest one a run that
    /// stopped before Stage 3 has).
    #[arg(long)]
    pub graph: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl RunArg {
    fn open(&self) -> anyhow::Result<RunRecord> {
        let dir = resolve_run(&self.run, &runs_base(self.runs_dir.as_deref()))?;
        Ok(RunRecord::open_graph(dir, self.graph.as_deref())?)
    }
}

#[derive(Debug, Args)]
pub struct StateArgs {
    #[command(flatten)]
    pub run: RunArg,
    /// Checkpoint: a number from `kt debug history`, `input`, `head` (end of the recorded run) or `latest`.
    #[arg(long, default_value = "latest")]
    pub at: String,
    /// Only this field (a dotted path reaches inside: best.kernel.code, plan.0).
    #[arg(long)]
    pub field: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub run: RunArg,
    /// The earlier checkpoint.
    pub a: String,
    /// The later checkpoint.
    pub b: String,
}

#[derive(Debug, Args)]
pub struct NodeArgs {
    #[command(flatten)]
    pub run: RunArg,
    /// The node to run (e.g. plan, validate, apply).
    pub node: String,
    /// The saved state to run it on (default: the first checkpoint of the recorded run where NODE runs next).
    #[arg(long)]
    pub at: Option<String>,
    /// Who answers LLM calls: replay (the run's recorded answers), live (the LLM the run recorded),
    /// scripted:FILE, or another PROVIDER:MODEL (which overrides the recorded one).
    #[arg(long, default_value = "replay")]
    pub llm: String,
    /// Send this file's text instead of the node's first rendered prompt (needs --llm live or scripted:FILE).
    #[arg(long)]
    pub prompt_override: Option<PathBuf>,
    /// Store the result in the run's history as a new branch (a fork); `kt resume` then continues it.
    #[arg(long)]
    pub commit: bool,
}

#[derive(Debug, Args)]
pub struct BreakArgs {
    #[command(flatten)]
    pub run: RunArg,
    /// Stop before this node runs (repeatable).
    #[arg(long)]
    pub before: Vec<String>,
    /// Stop after this node has run (repeatable).
    #[arg(long)]
    pub after: Vec<String>,
    /// Remove every breakpoint (combined with --before/--after: replace them).
    #[arg(long)]
    pub clear: bool,
}

pub fn run(args: DebugArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        DebugCommand::History(a) => show_history(a),
        DebugCommand::State(a) => show_state(a),
        DebugCommand::Diff(a) => show_diff(a),
        DebugCommand::Node(a) => node(a),
        DebugCommand::Break(a) => breakpoints(a),
    }
}

fn show_history(a: RunArg) -> anyhow::Result<ExitCode> {
    let record = a.open()?;
    let h = history(&record)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&h)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{}: {} checkpoints, {} branches",
        h.graph_run,
        h.checkpoints.len(),
        h.branches.len()
    );
    println!(
        "{:>5} {:>6} {:>6} {:>5} {:<9} {:<22} {:<24} CHANGED",
        "CP", "PARENT", "BRANCH", "STEP", "SOURCE", "RAN", "NEXT"
    );
    for c in &h.checkpoints {
        println!(
            "{:>5} {:>6} {:>6} {:>5} {:<9} {:<22} {:<24} {}{}",
            format!("#{}", c.checkpoint),
            c.parent
                .map(|p| format!("#{p}"))
                .unwrap_or_else(|| "-".into()),
            format!("b{}", c.branch),
            c.step,
            c.source,
            c.ran.join(","),
            if c.next.is_empty() {
                "(end)".to_string()
            } else {
                c.next.join(",")
            },
            c.changed.join(","),
            c.stopped
                .as_ref()
                .map(|s| format!("   <- stopped: {s}"))
                .unwrap_or_default()
        );
    }
    for b in h.branches.iter().filter(|b| b.origin.is_some()) {
        if let Some((ob, oc)) = b.origin {
            println!(
                "branch b{} from b{ob} at #{oc} ({})",
                b.branch,
                if b.reuses_effects {
                    "replay: reuses recorded effects"
                } else {
                    "fork: asks anew"
                }
            );
        }
    }
    if !h.breakpoints.before.is_empty() || !h.breakpoints.after.is_empty() {
        println!(
            "breakpoints: before {:?}, after {:?}",
            h.breakpoints.before, h.breakpoints.after
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show_state(a: StateArgs) -> anyhow::Result<ExitCode> {
    let record = a.run.open()?;
    let at = record.resolve(&a.at)?;
    let value = state_at(&record, at, a.field.as_deref())?;
    match (&value, a.run.json) {
        // A text field (a kernel, a prompt) prints as itself, ready to save or diff.
        (serde_json::Value::String(s), false) => println!("{s}"),
        _ => println!("{}", serde_json::to_string_pretty(&value)?),
    }
    Ok(ExitCode::SUCCESS)
}

fn show_diff(a: DiffArgs) -> anyhow::Result<ExitCode> {
    let record = a.run.open()?;
    let (x, y) = (record.resolve(&a.a)?, record.resolve(&a.b)?);
    let changes = diff(&record, x, y)?;
    if a.run.json {
        println!("{}", serde_json::to_string_pretty(&changes)?);
    } else if changes.is_empty() {
        println!("no differences between {x} and {y}");
    } else {
        print!("{}", render_text(&changes));
    }
    Ok(ExitCode::SUCCESS)
}

fn node(mut a: NodeArgs) -> anyhow::Result<ExitCode> {
    match a.run.graph.as_deref() {
        None => a.run.graph = Some("stage3".into()),
        Some("stage3") => {}
        Some(other) => anyhow::bail!(
            "running a node again is available for Stage 3 graphs (the strategies); `--graph {other}` can be inspected with history, state and diff"
        ),
    }
    let record = a.run.open()?;
    let at = match &a.at {
        Some(spec) => record.resolve(spec)?,
        None => first_checkpoint_before(&record, &a.node)?,
    };
    let output = session_dir(&record, "node");
    let mut setup = Setup::new(super::replay::llm_choice(&a.llm, &record)?, &output);
    if let Some(file) = &a.prompt_override {
        setup.prompt_override = Some(
            std::fs::read_to_string(file)
                .with_context(|| format!("reading the prompt override {}", file.display()))?,
        );
    }
    let rt = tokio::runtime::Runtime::new()?;
    let report = rt.block_on(debug_node(
        &Stage3Binding::default(),
        &record,
        &setup,
        &NodeDebug {
            node: a.node.clone(),
            at,
            commit: a.commit,
        },
    ))?;
    if a.run.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("node `{}` at #{} (llm: {})", report.node, report.at, a.llm);
    print_calls(&report);
    print_node_result(&report)?;
    Ok(ExitCode::SUCCESS)
}

/// Each LLM call of the node: its prompt (said when overridden) and its raw answer.
fn print_calls(report: &NodeReport) {
    for (i, c) in report.calls.iter().enumerate() {
        println!(
            "\n--- call {} [{}] {} ({}) ---",
            i + 1,
            c.label,
            if c.overridden {
                "prompt OVERRIDDEN"
            } else {
                "prompt"
            },
            c.origin
        );
        println!("{}", kt_record::terminal_safe(&c.prompt));
        println!("--- raw answer ---");
        println!(
            "{}",
            kt_record::terminal_safe(
                c.answer
                    .as_deref()
                    .or(c.error.as_deref())
                    .unwrap_or("(none)")
            )
        );
    }
}

/// What the node did: its update and tuning, its route, how it compares with the recorded run, and whether
/// it was committed.
fn print_node_result(report: &NodeReport) -> anyhow::Result<()> {
    println!(
        "\n--- update ---\n{}",
        serde_json::to_string_pretty(&report.update)?
    );
    if !report.tuning.is_empty() {
        println!(
            "--- tuning ---\n{}",
            serde_json::to_string_pretty(&report.tuning)?
        );
    }
    println!(
        "route: {} -> {}",
        report.node,
        if report.route.is_empty() {
            "END".to_string()
        } else {
            report.route.join(", ")
        }
    );
    match report.matches_recorded {
        Some(true) => println!("same update as the recorded run"),
        Some(false) => {
            println!("differs from the recorded run's update (see --json: recorded_update)")
        }
        None => println!("the recorded run did not run this node at #{}", report.at),
    }
    match report.committed {
        Some(cp) => {
            println!("committed as checkpoint #{cp} on a new branch; `kt resume` continues from it")
        }
        None => println!("history unchanged (add --commit to keep the result)"),
    }
    Ok(())
}

/// The first checkpoint of the recorded run (branch 0) at which `node` is the next to run.
fn first_checkpoint_before(record: &RunRecord, node: &str) -> anyhow::Result<CheckpointId> {
    let cps = record.checkpoints()?;
    cps.iter()
        .find(|c| c.branch.0 == 0 && c.next.iter().any(|t| t.node == node))
        .map(|c| c.id)
        .with_context(|| {
            format!(
                "the recorded run never ran `{node}`; pass --at CHECKPOINT (see `kt debug history`)"
            )
        })
}

fn breakpoints(mut a: BreakArgs) -> anyhow::Result<ExitCode> {
    // breakpoints stop the strategies' nodes: they are stored with the run's Stage 3 graph
    a.run.graph.get_or_insert_with(|| "stage3".into());
    let record = a.run.open()?;
    let known = breakpoint_nodes(&record)?;
    let mut bp = if a.clear {
        Breakpoints::default()
    } else {
        record.meta()?.breakpoints
    };
    for n in a.before {
        if !bp.before.contains(&n) {
            bp.before.push(n);
        }
    }
    for n in a.after {
        if !bp.after.contains(&n) {
            bp.after.push(n);
        }
    }
    let stored = set_breakpoints(&record, bp, &known)?;
    if a.run.json {
        println!("{}", serde_json::to_string_pretty(&stored)?);
    } else if stored.before.is_empty() && stored.after.is_empty() {
        println!("no breakpoints");
    } else {
        println!(
            "breakpoints: before {:?}, after {:?}",
            stored.before, stored.after
        );
    }
    Ok(ExitCode::SUCCESS)
}
