//! The coordinator end to end with a fake `kt` (tests/fake-kt.sh): a full matrix interrupted halfway and
//! rerun to completion without running any cell twice, budgets, crashes, the report of a real ledger, plots,
//! and the SLURM scripts (checked with shellcheck and by running the array script for every index).

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kt_experiments::{
    CellStatus, Design, GpuRequest, KtBinary, Ledger, Report, ReportFormat, RunOptions, RunState,
    SlurmOptions, StopSignal, expand, run_dir, run_experiment, write_plots, write_slurm,
};

const FAKE_KT: &str = include_str!("fake-kt.sh");

/// 2 kernels × 3 strategies × 2 settings × 2 repeats = 24 cells.
const MATRIX: &str = r#"
name = "matrix"
kernels = ["k/*.cu"]
models = ["scripted:s.toml"]
repeats = 2
strategies = [
  { name = "one-prompt", grid = { tests = [1, 3] } },
  { name = "explicit", grid = { tests = [1, 3] } },
  { name = "autonomous", grid = { replan = [0, 3] } },
]
"#;

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    out: PathBuf,
    log: PathBuf,
    fake: PathBuf,
}

fn setup(design: &str) -> (Setup, Design) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::create_dir_all(root.join("k")).unwrap();
    for k in ["alpha", "beta"] {
        std::fs::write(
            root.join(format!("k/{k}.cu")),
            "__global__ void k(float* a) {}\n",
        )
        .unwrap();
    }
    std::fs::write(root.join("exp.toml"), design).unwrap();
    let fake = root.join("fake-kt.sh");
    std::fs::write(&fake, FAKE_KT).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(root.join("locks")).unwrap();
    let design = Design::load(&root.join("exp.toml")).unwrap();
    let s = Setup {
        out: root.join("out"),
        log: root.join("invocations.log"),
        fake,
        root,
        _dir: dir,
    };
    (s, design)
}

/// The fake, run through `env` so that each test has its own settings (the test process's environment is
/// shared by all tests).
fn fake_kt(s: &Setup, vars: &[(&str, &str)]) -> KtBinary {
    let mut kt = KtBinary::new("/usr/bin/env");
    kt.prefix_args
        .push(format!("FAKE_KT_LOG={}", s.log.display()));
    kt.prefix_args
        .push(format!("FAKE_KT_LOCKS={}", s.root.join("locks").display()));
    kt.prefix_args
        .extend(vars.iter().map(|(k, v)| format!("{k}={v}")));
    kt.prefix_args.push(s.fake.display().to_string());
    kt
}

fn options(s: &Setup, kt: KtBinary) -> RunOptions {
    let mut o = RunOptions::new(&s.out, kt);
    o.grace = Duration::from_secs(5);
    o.poll = Duration::from_millis(20);
    o.progress = false;
    o
}

fn invocations(s: &Setup) -> Vec<(String, String)> {
    std::fs::read_to_string(&s.log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (a, b) = l.split_once(' ').unwrap_or((l, ""));
            (a.to_string(), b.to_string())
        })
        .collect()
}

fn ledger_lines(s: &Setup) -> usize {
    std::fs::read_to_string(s.out.join("cells.jsonl")).map_or(0, |t| t.lines().count())
}

#[test]
fn an_interrupted_matrix_reruns_to_completion_without_running_any_cell_twice() {
    let (s, design) = setup(MATRIX);
    let cells = expand(&design).unwrap();
    assert_eq!(cells.len(), 24);
    let mut opts = options(
        &s,
        fake_kt(
            &s,
            &[("FAKE_KT_SLEEP", "0.05"), ("FAKE_KT_SLOW_ON", "-beta-")],
        ),
    );
    opts.gpus = vec!["0".into(), "1".into()];

    // First pass: the 12 alpha cells finish quickly, the beta cells would take 30 s each. Stop (as Ctrl-C
    // would) once the alpha cells are recorded and two beta cells are at work, one on each GPU.
    let stop = StopSignal::new();
    let first = std::thread::scope(|scope| {
        let watcher = stop.clone();
        let s = &s;
        scope.spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            let working_on_beta = || {
                invocations(s)
                    .iter()
                    .filter(|(what, dir)| what == "working" && dir.contains("beta"))
                    .count()
            };
            while (ledger_lines(s) < 12 || working_on_beta() < 2) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            watcher.stop();
        });
        run_experiment(&design, &cells, &opts, &stop).unwrap()
    });
    assert!(!first.complete(), "{first:?}");
    assert_eq!(first.finished, 12, "{first:?}");
    assert_eq!(
        first.not_done, 12,
        "2 stopped while running, 10 never started: {first:?}"
    );
    let recorded_first = ledger_lines(&s);
    assert_eq!(recorded_first, 12);
    let partial = cells
        .iter()
        .filter(|c| {
            matches!(
                run_dir::locate(&s.out.join("cells").join(c.id.as_str())).unwrap(),
                RunState::Partial { .. }
            )
        })
        .count();
    assert_eq!(
        partial, 2,
        "the two cells running at the stop were interrupted and are resumable"
    );

    // Second pass, at normal speed: completes.
    let opts = RunOptions {
        kt: fake_kt(&s, &[("FAKE_KT_SLEEP", "0.05")]),
        ..opts
    };
    let second = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert!(second.complete(), "{second:?}");
    assert_eq!(second.skipped, recorded_first);
    assert_eq!(second.finished + second.skipped, 24);

    // Every cell was started by exactly one `transform`, the interrupted ones resumed once, and no GPU ever
    // ran two cells at once.
    let calls = invocations(&s);
    assert!(
        !calls.iter().any(|(what, _)| what == "overlap"),
        "{calls:?}"
    );
    let mut transforms: BTreeMap<String, usize> = BTreeMap::new();
    for (what, dir) in &calls {
        if what == "transform" {
            *transforms.entry(dir.clone()).or_default() += 1;
        }
    }
    assert_eq!(transforms.len(), 24);
    assert!(transforms.values().all(|&n| n == 1), "{transforms:?}");
    let resumes = calls.iter().filter(|(what, _)| what == "resume").count();
    assert_eq!(resumes, partial);

    // One ledger line per cell, all finished.
    assert_eq!(ledger_lines(&s), 24);
    let records = Ledger::new(&s.out).load().unwrap();
    assert_eq!(records.len(), 24);
    assert!(records.values().all(|r| r.status == CellStatus::Finished));

    // A third pass has nothing to do.
    let third = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert_eq!(third.skipped, 24);
    assert_eq!(invocations(&s).len(), calls.len());

    // The report of this ledger: the fake's speedups are 1.1, 1.5 and 2.0 by strategy.
    let (report, _) = Report::load(&s.out, None).unwrap();
    assert_eq!((report.planned, report.recorded), (Some(24), 24));
    assert_eq!(report.experiment.as_deref(), Some("matrix"));
    assert_eq!(report.strategies.len(), 6, "3 strategies × 2 settings");
    for summary in &report.strategies {
        let expected = match summary.variant.split('[').next().unwrap() {
            "one-prompt" => 1.1,
            "explicit" => 1.5,
            _ => 2.0,
        };
        assert_eq!(summary.cells, 4);
        assert!(
            (summary.geomean_speedup.unwrap() - expected).abs() < 1e-9,
            "{summary:?}"
        );
        // The thesis's gain, (t_naive − t_best) / t_naive, from the runs' `gain`.
        assert!((summary.mean_gain_pct.unwrap() - (1.0 - 1.0 / expected) * 100.0).abs() < 1e-3);
    }
    let md = report.render(ReportFormat::Markdown);
    assert!(md.contains("autonomous[replan=3]"), "{md}");
    let plots = write_plots(&report, &s.out.join("report")).unwrap();
    assert_eq!(plots.len(), 6);
    for p in &plots {
        assert!(
            std::fs::metadata(p).unwrap().len() > 1000,
            "{} has content",
            p.display()
        );
    }
}

#[test]
fn budgets_stop_cells_resumably_and_mark_them_over_budget() {
    let design_text = r#"
name = "budgets"
kernels = ["k/alpha.cu"]
strategies = ["explicit"]
[[study]]
name = "time"
models = ["scripted:time.toml"]
# long enough for the fake to reach its SIGINT handler on a loaded machine (a signal before it leaves no
# result), far below its 30 s of work
budget = { time = "2s" }
[[study]]
name = "tokens"
models = ["scripted:tokens.toml"]
budget = { tokens = 150 }
[[study]]
name = "dollars"
models = ["scripted:dollars.toml"]
budget = { dollars = 0.015 }
"#;
    let (s, design) = setup(design_text);
    let cells = expand(&design).unwrap();
    assert_eq!(cells.len(), 3);
    let mut opts = options(
        &s,
        fake_kt(
            &s,
            &[
                ("FAKE_KT_SLEEP", "30"),
                ("FAKE_KT_TOKENS", "100"),
                ("FAKE_KT_COST", "0.01"),
            ],
        ),
    );
    opts.jobs = Some(3);
    let start = Instant::now();
    let summary = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "stopped long before the 30 s of work"
    );
    assert_eq!(summary.over_budget, 3, "{summary:?}");
    let records = Ledger::new(&s.out).load().unwrap();
    let kinds: BTreeMap<String, String> = records
        .values()
        .map(|r| (r.studies[0].clone(), r.over_budget.unwrap().to_string()))
        .collect();
    assert_eq!(kinds["time"], "time");
    assert_eq!(kinds["tokens"], "tokens");
    assert_eq!(kinds["dollars"], "dollars");
    for r in records.values() {
        assert_eq!(
            r.result.as_ref().unwrap()["status"],
            "interrupted",
            "stopped with SIGINT, so resumable"
        );
        assert_eq!(r.llm_tokens, 200);
    }
    // Over budget is final: a rerun starts nothing.
    let before = invocations(&s).len();
    let again = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert_eq!(again.skipped, 3);
    assert_eq!(invocations(&s).len(), before);
}

#[test]
fn a_cell_that_ignores_sigint_is_killed_after_the_grace_period() {
    let (s, design) = setup(
        "name = \"g\"\nkernels = [\"k/alpha.cu\"]\nstrategies = [\"explicit\"]\nmodels = [\"scripted:s.toml\"]\nbudget = { time = \"200ms\" }\n",
    );
    let cells = expand(&design).unwrap();
    let mut opts = options(
        &s,
        fake_kt(&s, &[("FAKE_KT_SLEEP", "30"), ("FAKE_KT_IGNORE_INT", "1")]),
    );
    opts.grace = Duration::from_millis(300);
    let start = Instant::now();
    let summary = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(summary.over_budget, 1);
}

#[test]
fn crashed_cells_are_recorded_and_resumed_by_the_next_run() {
    let (s, design) = setup(MATRIX);
    let cells = expand(&design).unwrap();
    let opts = {
        let mut o = options(
            &s,
            fake_kt(
                &s,
                &[
                    ("FAKE_KT_DIE_ON", "-beta-"),
                    ("FAKE_KT_FAIL_ON", "-alpha-one-prompt-"),
                ],
            ),
        );
        o.jobs = Some(4);
        o
    };
    let first = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert_eq!(first.crashed, 12, "{first:?}");
    assert_eq!(first.failed, 4, "{first:?}");
    assert!(!first.complete());
    let records = Ledger::new(&s.out).load().unwrap();
    let crashed = records
        .values()
        .find(|r| r.status == CellStatus::Crashed)
        .unwrap();
    assert!(
        crashed
            .error
            .as_deref()
            .unwrap()
            .contains("crashing as told"),
        "{:?}",
        crashed.error
    );

    let opts = RunOptions {
        kt: fake_kt(&s, &[]),
        ..opts
    };
    let second = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert!(second.complete(), "{second:?}");
    assert_eq!(second.finished, 12);
    let calls = invocations(&s);
    assert_eq!(calls.iter().filter(|(w, _)| w == "transform").count(), 24);
    assert_eq!(calls.iter().filter(|(w, _)| w == "resume").count(), 12);
    let (report, _) = Report::load(&s.out, None).unwrap();
    let failed: usize = report.strategies.iter().map(|x| x.failed).sum();
    assert_eq!(failed, 4);
}

#[test]
fn a_models_llm_configuration_reaches_its_cells_as_kt_config() {
    let (s, _) = setup(MATRIX);
    std::fs::write(s.root.join("gemini.toml"), "[llm]\nprovider = \"openai\"\n").unwrap();
    std::fs::write(
        s.root.join("exp.toml"),
        "name = \"c\"\nkernels = [\"k/alpha.cu\"]\nstrategies = [\"explicit\"]\n\
         models = [\"openai:gemini-2.5-pro\", \"scripted:s.toml\"]\n\
         [llm_configs]\n\"openai:gemini-2.5-pro\" = \"gemini.toml\"\n",
    )
    .unwrap();
    let design = Design::load(&s.root.join("exp.toml")).unwrap();
    let cells = expand(&design).unwrap();
    let opts = options(&s, fake_kt(&s, &[]));
    let summary = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert_eq!(summary.finished, 2);
    let configs: Vec<(String, String)> = invocations(&s)
        .into_iter()
        .filter(|(what, _)| what == "config")
        .collect();
    assert_eq!(
        configs.len(),
        1,
        "only the Gemini cell has one: {configs:?}"
    );
    assert!(configs[0].1.contains("gemini-2.5-pro") && configs[0].1.ends_with("/gemini.toml"));

    std::fs::write(
        s.root.join("bad.toml"),
        "name = \"c\"\nkernels = [\"k/alpha.cu\"]\nstrategies = [\"explicit\"]\nmodels = [\"openai:x\"]\n\
         [llm_configs]\n\"openai:x\" = \"missing.toml\"\n",
    )
    .unwrap();
    let e = Design::load(&s.root.join("bad.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("missing.toml") && e.contains("is not a file"),
        "{e}"
    );
}

#[test]
fn each_gpu_runs_one_cell_at_a_time_and_failures_or_outages_never_block_the_others() {
    let (s, design) = setup(MATRIX);
    let cells = expand(&design).unwrap();
    let mut opts = options(
        &s,
        fake_kt(
            &s,
            &[
                ("FAKE_KT_SLEEP", "0.05"),
                ("FAKE_KT_DIE_ON", "-alpha-one-prompt-"),
                ("FAKE_KT_NO_GPU_ON", "-alpha-explicit-"),
                ("FAKE_KT_LLM_DOWN_ON", "-alpha-autonomous-"),
                ("FAKE_KT_FAIL_ON", "-beta-one-prompt-"),
            ],
        ),
    );
    opts.gpus = vec!["0".into(), "1".into()];
    let first = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert_eq!(
        (
            first.crashed,
            first.needs_gpu,
            first.llm_unavailable,
            first.failed,
            first.finished
        ),
        (4, 4, 4, 4, 8),
        "{first:?}"
    );
    assert!(!first.complete());

    // Each record names the GPU its cell was given, which is the one the cell saw, and never two at once.
    let calls = invocations(&s);
    assert!(
        !calls.iter().any(|(what, _)| what == "overlap"),
        "{calls:?}"
    );
    let records = Ledger::new(&s.out).load().unwrap();
    let mut used = std::collections::BTreeSet::new();
    for r in records.values() {
        let gpu = r.gpu.clone().unwrap();
        let dir = s.out.join("cells").join(r.cell_id.as_str());
        let seen = format!("{} gpu={gpu}", dir.display());
        assert!(
            calls
                .iter()
                .any(|(what, rest)| what == "working" && *rest == seen),
            "{seen} in {calls:?}"
        );
        used.insert(gpu);
    }
    assert_eq!(used.len(), 2, "both GPUs had work");
    let no_gpu = records
        .values()
        .find(|r| r.status == CellStatus::NeedsGpu)
        .unwrap();
    assert!(
        no_gpu.error.as_deref().unwrap().starts_with("needs a GPU"),
        "{:?}",
        no_gpu.error
    );

    // Infrastructure failures are not results: the report leaves them out and counts them.
    let (report, _) = Report::load(&s.out, None).unwrap();
    assert_eq!(
        (report.crashed, report.needs_gpu, report.llm_unavailable),
        (4, 4, 4)
    );
    let counted: usize = report.strategies.iter().map(|x| x.cells).sum();
    assert_eq!(counted, 12);

    // The next run resumes exactly those twelve and skips the final ones.
    let opts = RunOptions {
        kt: fake_kt(&s, &[]),
        ..opts
    };
    let second = run_experiment(&design, &cells, &opts, &StopSignal::new()).unwrap();
    assert!(second.complete(), "{second:?}");
    assert_eq!((second.skipped, second.finished), (12, 12));
    let calls = invocations(&s);
    assert_eq!(calls.iter().filter(|(w, _)| w == "transform").count(), 24);
    assert_eq!(calls.iter().filter(|(w, _)| w == "resume").count(), 12);
}

fn shellcheck_available() -> bool {
    let found = std::process::Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let msg = "shellcheck is not installed (Debian: apt-get install shellcheck; scripts/test.sh does it)";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{msg}: it is required when CI=true"
        );
        eprintln!("skipping the shellcheck part: {msg}");
    }
    found
}

#[test]
fn slurm_scripts_pass_shellcheck_and_map_each_array_index_to_exactly_one_cell() {
    let (s, design) = setup(MATRIX);
    let cells = expand(&design).unwrap();
    // A stand-in for kt that prints the cell it was asked to run.
    let echo_kt = s.root.join("echo-kt.sh");
    std::fs::write(
        &echo_kt,
        "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > \"$ECHO_KT_TO\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&echo_kt, std::fs::Permissions::from_mode(0o755)).unwrap();
    let opts = SlurmOptions {
        partition: "gpu".into(),
        time: Some("04:00:00".into()),
        gpus: 1,
        gpu_request: GpuRequest::GpusPerTask,
        cpus_per_task: 4,
        out: s.root.join("out dir"),
        kt: PathBuf::from("/opt/kt/bin/kt"),
        requeue: true,
        max_running: Some(3),
        account: Some("proj 42".into()),
        qos: Some("normal".into()),
        extra: vec!["--mem=64G".into()],
        env: vec![("KT_LLM".into(), "openai:gpt-4.1".into())],
    };
    let scripts = write_slurm(&design.name, &design.file, &cells, &opts).unwrap();
    assert_eq!(scripts.tasks, 24);
    let array = std::fs::read_to_string(&scripts.array).unwrap();
    for line in [
        "#SBATCH --array=0-23%3\n",
        "#SBATCH --partition=gpu\n",
        "#SBATCH --account='proj 42'\n",
        "#SBATCH --qos=normal\n",
        "#SBATCH --mem=64G\n",
        "#SBATCH --gpus-per-task=1\n",
        "#SBATCH --requeue\n",
        "#SBATCH --time=04:00:00\n",
        "export KT_LLM=openai:gpt-4.1\n",
    ] {
        assert!(array.contains(line), "{line} in {array}");
    }
    assert!(!array.contains("--gres"), "{array}");
    let collect = std::fs::read_to_string(&scripts.collect).unwrap();
    assert!(collect.contains("#SBATCH --account='proj 42'\n") && !collect.contains("gpus"));

    if shellcheck_available() {
        for script in [&scripts.array, &scripts.collect, &scripts.submit] {
            let out = std::process::Command::new("shellcheck")
                .arg(script)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "shellcheck {}:\n{}",
                script.display(),
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }

    let mut seen = Vec::new();
    for index in 0..scripts.tasks {
        let args_file = s.root.join(format!("args-{index}"));
        let out = std::process::Command::new("bash")
            .arg(&scripts.array)
            .env("KT", &echo_kt)
            .env("ECHO_KT_TO", &args_file)
            .env("SLURM_ARRAY_TASK_ID", index.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "task {index}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let args: Vec<String> = std::fs::read_to_string(&args_file)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(args[..2], ["experiment", "run-cell"]);
        assert_eq!(Path::new(&args[2]), design.file);
        assert_eq!(args[3], "--cell");
        assert_eq!(
            args[5..],
            ["--out".to_string(), opts.out.display().to_string()]
        );
        // The task's output went to the cell's own log, with a header naming the task.
        let log =
            std::fs::read_to_string(scripts.dir.join(format!("logs/{}.log", args[4]))).unwrap();
        assert!(log.contains(&format!("_{index} (restart 0)")), "{log}");
        seen.push(args[4].clone());
    }
    let expected: Vec<String> = cells.iter().map(|c| c.id.to_string()).collect();
    assert_eq!(
        seen, expected,
        "array index i runs cell i, each cell exactly once"
    );

    let past_end = std::process::Command::new("bash")
        .arg(&scripts.array)
        .env("KT", &echo_kt)
        .env("SLURM_ARRAY_TASK_ID", "24")
        .output()
        .unwrap();
    assert!(
        !past_end.status.success(),
        "an index past the list is an error, not a silent no-op"
    );
}

#[test]
fn the_shipped_designs_expand_to_the_documented_cell_counts() {
    let experiments = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let thesis = Design::load(&experiments.join("thesis.toml")).unwrap();
    let cells = expand(&thesis).unwrap();
    assert_eq!(cells.len(), 8 * 3 * 4 * 3);
    let kernels: std::collections::BTreeSet<&str> =
        cells.iter().map(|c| c.kernel.as_str()).collect();
    assert_eq!(kernels.len(), 8);
    assert!(
        cells
            .iter()
            .all(|c| c.budget.time == Some(Duration::from_secs(4 * 3600)))
    );
    // The thesis's four models, each with its LLM configuration, and its autonomous settings: breakdown off,
    // replan on; DeepSeek-R1 both off.
    let models: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.model.as_str()).collect();
    assert_eq!(models.len(), 4);
    for model in &models {
        assert!(thesis.llm_configs[*model].is_file(), "{model}");
    }
    for c in cells.iter().filter(|c| c.strategy == "autonomous") {
        let setting = |k: &str| c.settings[k].to_string();
        let replan = if c.model.contains("deepseek-reasoner") {
            "0"
        } else {
            "3"
        };
        assert_eq!(
            (setting("breakdown").as_str(), setting("replan").as_str()),
            ("0", replan),
            "{}",
            c.id
        );
    }
    let prestudy = Design::load(&experiments.join("thesis-prestudy.toml")).unwrap();
    let cells = expand(&prestudy).unwrap();
    assert_eq!(
        cells.len(),
        4 * 4 * 3,
        "4 kernels × breakdown × replan × 3 models"
    );

    let smoke = Design::load(&experiments.join("smoke.toml")).unwrap();
    let cells = expand(&smoke).unwrap();
    // vectorAdd and matrixAdd × 3 strategies (scripted) + the replayed matmul demo.
    assert_eq!(cells.len(), 7);
    for c in &cells {
        let stem = Path::new(&c.kernel_file)
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap();
        let answers = match c.model.split_once(':') {
            Some(("scripted", path)) => path.replace("{kernel}", stem),
            Some(("replay", path)) => path.to_string(),
            other => panic!("{}: unexpected model {other:?}", c.kernel_file),
        };
        assert!(
            smoke.root.join(&answers).is_file(),
            "{}: {answers} exists",
            c.kernel_file
        );
    }
}
